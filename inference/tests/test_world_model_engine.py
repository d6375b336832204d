"""The neural engine with a tiny random model on the CPU: registry, frames, batching, snapshots."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from inference.engine import RaycastEngine, StepRequest, available_engines, create_engine
from inference.world.model import DEFAULT_CHECKPOINT, WorldModel, WorldModelConfig, save_world_model
from inference.world.state import Action
from inference.world_model_engine import WorldModelEngine

TINY = WorldModelConfig(
    autoencoder_width=8, plane_width=4, detail_width=8, detail_blocks=1, model_dim=32, heads=2, layers=2, window=3
)
SPEC = {"seed": 21, "size": 12, "time_of_day": "dawn"}
INPUTS = [
    (Action.FORWARD, []),
    (Action.TURN_LEFT, [{"kind": "snow"}]),
    (Action.FORWARD | Action.STRAFE_RIGHT, [{"kind": "spawn", "object": "lantern"}]),
    (Action.BACK, []),
    (Action.TURN_RIGHT, [{"kind": "night"}]),
]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    model = WorldModel(TINY)
    # Not the copy of the previous latent the head starts as, so that the context matters to every frame.
    torch.nn.init.normal_(model.dynamics.latent_out.weight, std=0.2)
    path = tmp_path_factory.mktemp("model") / "world_model.safetensors"
    save_world_model(model, path)
    return path


def engine(checkpoint: Path) -> WorldModelEngine:
    built = create_engine("worldmodel", checkpoint=checkpoint, width=96, height=80, device="cpu")
    assert isinstance(built, WorldModelEngine)
    return built


def test_the_registry_offers_the_world_model_only_with_its_checkpoint() -> None:
    engines = available_engines()
    assert engines["raycaster"] is RaycastEngine
    assert ("worldmodel" in engines) == DEFAULT_CHECKPOINT.exists()


def test_a_checkpoint_loads_into_an_engine_that_serves_numbered_jpeg_frames(checkpoint: Path) -> None:
    world_model = engine(checkpoint)
    session = world_model.open_session(SPEC)

    frames = [world_model.step([StepRequest(session, action, events)])[0] for action, events in INPUTS]

    assert [frame.number for frame in frames] == [1, 2, 3, 4, 5]
    image = Image.open(io.BytesIO(frames[0].jpeg))
    assert (image.format, image.size) == ("JPEG", (96, 80))
    last = world_model.frame(session)
    assert last is not None and last.shape == (64, 64, 3)


def test_a_batch_of_sessions_equals_each_session_stepped_alone(checkpoint: Path) -> None:
    batched, single = engine(checkpoint), engine(checkpoint)
    specs = [SPEC, {**SPEC, "seed": 22}, {**SPEC, "weather": "rain"}]
    batched_sessions = [batched.open_session(spec) for spec in specs[:2]]
    single_sessions = [single.open_session(spec) for spec in specs[:2]]

    for tick, (action, events) in enumerate(INPUTS):
        if tick == 2:  # a session joins late: its cache is shorter than the others' and padded in the batch
            batched_sessions.append(batched.open_session(specs[2]))
            single_sessions.append(single.open_session(specs[2]))
        batched.step([StepRequest(session, action, events) for session in batched_sessions])
        for session in single_sessions:
            single.step([StepRequest(session, action, events)])
        for together, alone in zip(batched_sessions, single_sessions, strict=True):
            together_frame, alone_frame = batched.frame(together), single.frame(alone)
            assert together_frame is not None and alone_frame is not None
            # Float sums in another order can round one 8-bit level the other way, no more.
            assert np.abs(together_frame.astype(int) - alone_frame.astype(int)).max() <= 1


def test_a_restored_snapshot_restarts_the_context_from_the_state_and_continues_the_world(checkpoint: Path) -> None:
    world_model = engine(checkpoint)
    original = world_model.open_session(SPEC)
    for action, events in INPUTS[:3]:
        world_model.step([StepRequest(original, action, events)])
    snapshot = world_model.snapshot(original)
    first, second = world_model.open_session(SPEC, snapshot), world_model.open_session(SPEC, snapshot)
    raycaster = RaycastEngine(width=64, height=64)
    replayed = raycaster.open_session(SPEC, snapshot)  # the same bytes resume under the raycaster

    for action, events in INPUTS[3:]:
        frames = world_model.step([StepRequest(session, action, events) for session in (original, first, second)])
        raycaster.step([StepRequest(replayed, action, events)])
        # The snapshot holds the state, not the model's context: restores are identical to one another...
        assert frames[1].jpeg == frames[2].jpeg
        assert frames[0].number == frames[1].number == frames[2].number
        # ...and the world itself (pose, events, objects, tick) goes on exactly as in the original session.
        assert world_model.snapshot(first) == world_model.snapshot(original) == raycaster.snapshot(replayed)
    # ...but not bit-equal to the uninterrupted session, whose context goes further back.
    original_frame, restored_frame = world_model.frame(original), world_model.frame(first)
    assert original_frame is not None and restored_frame is not None
    assert not np.array_equal(original_frame, restored_frame)
