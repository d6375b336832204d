"""The engine interface through the raycaster engine: sessions, batches, snapshots, frames."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from inference.engine import (
    RaycastEngine,
    StepError,
    StepRequest,
    available_engines,
    create_engine,
    preview_jpeg,
)
from inference.world.state import Action

SPEC = {"seed": 21, "size": 12, "time_of_day": "dawn"}
INPUTS = [
    (Action.FORWARD, []),
    (Action.TURN_LEFT, [{"kind": "snow"}]),
    (Action.FORWARD | Action.STRAFE_RIGHT, [{"kind": "spawn", "object": "lantern"}]),
    (Action.BACK, []),
]


def engine() -> RaycastEngine:
    return RaycastEngine(width=64, height=48, jpeg_quality=75)


def test_the_registry_announces_the_raycaster() -> None:
    assert available_engines()["raycaster"] is RaycastEngine
    assert isinstance(create_engine("raycaster", width=32, height=32, device="cpu"), RaycastEngine)
    with pytest.raises(ValueError, match="unknown engine 'giant'; available: raycaster"):
        create_engine("giant")


def test_steps_return_numbered_jpeg_frames_of_the_configured_size() -> None:
    raycaster = engine()
    session = raycaster.open_session(SPEC)

    frames = [raycaster.step([StepRequest(session, action, events)])[0] for action, events in INPUTS]

    assert [frame.number for frame in frames] == [1, 2, 3, 4]
    assert all(frame.session == session for frame in frames)
    assert Image.open(io.BytesIO(frames[0].jpeg)).size == (64, 48)
    assert Image.open(io.BytesIO(frames[0].jpeg)).format == "JPEG"


def test_a_batch_of_sessions_equals_each_session_stepped_alone() -> None:
    batched, single = engine(), engine()
    specs = [SPEC, {**SPEC, "seed": 22}, {**SPEC, "weather": "rain"}]
    batched_sessions = [batched.open_session(spec) for spec in specs]
    single_sessions = [single.open_session(spec) for spec in specs]

    for action, events in INPUTS:
        batch = [(session, action, events) for session in batched_sessions]
        batch_frames = batched.step(batch)  # type: ignore[arg-type]
        single_frames = [single.step([(session, action, events)])[0] for session in single_sessions]  # type: ignore[list-item]
        assert [frame.jpeg for frame in batch_frames] == [frame.jpeg for frame in single_frames]
        assert [frame.number for frame in batch_frames] == [frame.number for frame in single_frames]


def test_a_session_resumed_from_its_snapshot_shows_identical_next_frames() -> None:
    raycaster = engine()
    original = raycaster.open_session(SPEC)
    for action, events in INPUTS:
        raycaster.step([StepRequest(original, action, events)])
    resumed = raycaster.open_session(SPEC, raycaster.snapshot(original))

    for action, events in INPUTS:
        original_frame, resumed_frame = raycaster.step(
            [StepRequest(original, action, events), StepRequest(resumed, action, events)]
        )
        assert original_frame.jpeg == resumed_frame.jpeg
        assert original_frame.number == resumed_frame.number


def test_a_bad_request_steps_no_session_of_the_batch() -> None:
    raycaster = engine()
    first, second = raycaster.open_session(SPEC), raycaster.open_session(SPEC)
    before = raycaster.snapshot(first)

    with pytest.raises(StepError, match="unknown event kind") as raised:
        raycaster.step([StepRequest(first, 1, []), StepRequest(second, 1, [{"kind": "volcano"}])])
    assert raised.value.session == second
    assert raycaster.snapshot(first) == before
    with pytest.raises(StepError, match="no such session"):
        raycaster.step([StepRequest("nobody", 0, [])])
    with pytest.raises(StepError, match="appears twice"):
        raycaster.step([StepRequest(first, 0, []), StepRequest(first, 0, [])])
    with pytest.raises(StepError, match="action must be a bitmask"):
        raycaster.step([StepRequest(first, 64, [])])


def test_it_refuses_a_snapshot_of_another_world() -> None:
    raycaster = engine()
    snapshot = raycaster.snapshot(raycaster.open_session(SPEC))

    with pytest.raises(ValueError, match="another seed or size"):
        raycaster.open_session({**SPEC, "seed": 99}, snapshot)


def test_a_closed_session_is_forgotten() -> None:
    raycaster = engine()
    session = raycaster.open_session(SPEC)
    raycaster.close(session)

    with pytest.raises(StepError, match="no such session"):
        raycaster.step([StepRequest(session, 0, [])])


def test_a_preview_is_a_jpeg_of_the_first_view() -> None:
    preview = Image.open(io.BytesIO(preview_jpeg(SPEC, width=128, height=96)))

    assert (preview.format, preview.size) == ("JPEG", (128, 96))
