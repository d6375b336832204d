"""Every reopen replays its log within a bound, for every kind of session, and one that cannot fails alone."""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.engine import RaycastEngine
from inference.language.embedding import HashedWordsEmbedder
from inference.play.host import CONVERSATION, HostConfig, SessionHost
from inference.protocol import (
    PendingInput,
    ReplayedInput,
    SessionError,
    SessionOpen,
    Snapshot,
    WorkerToPlatform,
    type_of,
)
from inference.tests.platform_log import replayed_input, snapshot_kept
from inference.tests.test_session_host import STORY
from inference.world.state import from_snapshot

SPEC = {"seed": 5, "size": 10}
EVE = {"key": "character-0", "id": 7, "name": "Eve", "persona": "Eve keeps the light.", "greeting": "Hello.",
       "memory_scope": "player", "clues": []}  # fmt: skip
NARRATIVE = {"title": "Light", "description": "A lighthouse.", "content_rating": "everyone", "characters": [EVE],
             "hooks": [], "safety": {"blocked": []}}  # fmt: skip
# The fields of `session.open` for each kind of session: a world, a world with a story, a character on its own, a
# Live world.
KINDS: dict[str, dict[str, Any]] = {
    "world": {"engine": "raycaster", "spec": SPEC},
    "story": {"engine": "raycaster", "spec": SPEC, "story": STORY},
    "conversation": {"engine": CONVERSATION, "spec": {}},
    "live": {"engine": "raycaster", "spec": SPEC, "story": STORY, "live": True},
}
# A reopen of a few dozen ticks takes milliseconds; the bound leaves a slow, shared CI machine a wide margin.
REPLAY_DEADLINE_SECONDS = 5.0

inputs = st.one_of(
    st.builds(
        lambda kind, key: {"type": kind, "key": key},
        st.sampled_from(["key_down", "key_up"]),
        st.sampled_from(["KeyW", "KeyA", "KeyD", "ArrowLeft"]),
    ),
    st.builds(lambda text: {"type": "prompt", "text": text}, st.sampled_from(["make it night", "hello there"])),
    st.builds(lambda text: {"type": "speech", "character": "Eve", "text": text}, st.sampled_from(["hi", "the lamp?"])),
    st.builds(lambda index: {"type": "choice", "index": index}, st.integers(0, 1)),
    st.sampled_from([{"type": "pause"}, {"type": "resume"}]),
)
# Each step: the ticks that pass, then an input (or none).
scripts = st.lists(st.tuples(st.integers(0, 6), st.none() | inputs), max_size=12)


def host(config: HostConfig | None = None) -> SessionHost:
    engines = {"raycaster": RaycastEngine(width=16, height=16)}
    return SessionHost(engines, config or HostConfig(), embedder=HashedWordsEmbedder())


def session_open(kind: str, session: str = "s", **fields: Any) -> SessionOpen:
    """A `session.open` of a session of `kind` in the lighthouse world; `fields` add to or replace KINDS'."""
    return SessionOpen(session=session, narrative=NARRATIVE, **(KINDS[kind] | fields))


def played(
    kind: str, script: list[tuple[int, dict[str, Any] | None]], snapshot_at: int | None
) -> tuple[SessionHost, list[ReplayedInput], Snapshot | None]:
    """Play `script` on a host as the platform would: every input logged with what the host reported for it."""
    session_host = host()
    session_host.open(session_open(kind))
    log: list[ReplayedInput] = []
    snapshot = None
    for step, (ticks, given_input) in enumerate(script):
        for _ in range(ticks):
            session_host.tick()
        if step == snapshot_at and not session_host.sessions["s"].play.paused:
            # The worker snapshots right after a step (SessionHost.tick), when no world event waits.
            session_host.tick()
            snapshot = snapshot_kept(session_host.snapshot("s"))
        if given_input is not None:
            log.append(replayed_input(given_input, session_host.input("s", len(log) + 1, given_input)))
    return session_host, log, snapshot


def opened_within(session_host: SessionHost, message: SessionOpen, seconds: float) -> list[WorkerToPlatform]:
    """Open on a thread of its own and fail, rather than hang, when the open does not return in `seconds`."""
    outcome: list[list[WorkerToPlatform]] = []
    opening = threading.Thread(target=lambda: outcome.append(session_host.open(message)), daemon=True)
    opening.start()
    opening.join(seconds)
    if opening.is_alive():
        # Stop the runaway loop, so that it does not spin under the rest of the test run.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(opening.ident), ctypes.py_object(SystemExit))
        opening.join(1)
        raise AssertionError(f"opening a {message.engine} session did not finish within {seconds} s")
    return outcome[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(KINDS)),
    script=scripts,
    snapshot_at=st.none() | st.integers(0, 11),
    frames_seen=st.booleans(),
)
def test_every_kind_of_session_reopens_from_any_log_within_the_bound_to_the_same_state(
    kind: str, script: list[tuple[int, dict[str, Any] | None]], snapshot_at: int | None, frames_seen: bool
) -> None:
    live, log, snapshot = played(kind, script, snapshot_at)
    playing = live.sessions["s"]
    # A conversation sends no frames: the platform saw none, and its target is the frame it last saw (0).
    target_tick = playing.tick if frames_seen and kind != CONVERSATION else 0
    reopened = host()
    started = time.monotonic()
    opened = opened_within(
        reopened, session_open(kind, snapshot=snapshot, replay=log, target_tick=target_tick), REPLAY_DEADLINE_SECONDS
    )
    assert time.monotonic() - started < REPLAY_DEADLINE_SECONDS
    assert type_of(opened[0]) == "session.opened"
    hosted = reopened.sessions["s"]
    after = snapshot.sequence if snapshot else 0
    replayed = [entry.tick for entry in log if entry.sequence > after]
    if kind != CONVERSATION and max(replayed, default=0) > target_tick:
        live.tick()  # the last input waits for the next step, which the replay takes
    assert hosted.sequencer.applied == playing.sequencer.applied
    assert hosted.play.narrative() == playing.play.narrative()
    if kind == CONVERSATION:
        # Without frames the replay goes as far as the log does, past the snapshot's tick.
        assert hosted.tick == max([snapshot.tick if snapshot else 0, *replayed])
    elif frames_seen and not playing.play.paused:  # a paused world steps no more, a replay steps it to its last input
        assert hosted.tick == playing.tick
        world = from_snapshot(hosted.engine.snapshot(hosted.id))
        assert world == from_snapshot(playing.engine.snapshot(playing.id))


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), far_tick=st.integers(101, 2**31 - 1))
def test_a_log_beyond_the_replay_budget_fails_that_session_alone_and_quickly(kind: str, far_tick: int) -> None:
    session_host = host(HostConfig(replay_max_ticks=100))
    session_host.open(session_open("world", session="other"))
    logged = [ReplayedInput(sequence=1, tick=far_tick, input={"type": "key_down", "key": "KeyW"})]
    opened = opened_within(
        session_host, session_open(kind, replay=logged, target_tick=far_tick), REPLAY_DEADLINE_SECONDS
    )
    assert [type_of(message) for message in opened] == ["session.error"]
    assert "100 ticks" in opened[0].error
    assert "s" not in session_host.sessions
    frames, _ = session_host.tick()
    assert [frame.session for frame, _ in frames] == ["other"]
    # The player may come back: a reopen with a log inside the budget opens the session again.
    assert type_of(session_host.open(session_open(kind))[0]) == "session.opened"


def test_a_replay_that_runs_past_its_time_fails_that_session() -> None:
    session_host = host(HostConfig(replay_max_seconds=0.0))
    logged = [ReplayedInput(sequence=1, tick=50, input={"type": "key_down", "key": "KeyW"})]
    opened = session_host.open(session_open("world", replay=logged, target_tick=50))
    assert isinstance(opened[0], SessionError) and "s" not in session_host.sessions


def test_a_conversation_reopened_after_a_park_replays_its_talk_and_answers_the_next_words() -> None:
    talk = [
        (3, {"type": "speech", "character": "Eve", "text": "hi"}),
        (5, {"type": "speech", "character": "Eve", "text": "the lamp?"}),
    ]
    _, log, _ = played("conversation", talk, None)
    reopened = host()
    pending = [PendingInput(sequence=3, input={"type": "speech", "character": "Eve", "text": "and you?"})]
    opened = opened_within(
        reopened,
        session_open("conversation", replay=log, target_tick=0, pending=pending),
        REPLAY_DEADLINE_SECONDS,
    )
    assert [type_of(message) for message in opened] == ["session.opened", "session.applied"]
    assert opened[1].tick > log[-1].tick
    assert [job.kind for job in reopened.take_jobs()] == ["reply"]


class FailingEngine(RaycastEngine):
    """An engine whose every step raises, as a broken checkpoint might."""

    def step(self, requests: Any) -> Any:
        raise RuntimeError("the engine broke")


def test_an_engine_that_fails_its_step_fails_only_the_sessions_it_steps() -> None:
    session_host = SessionHost({"raycaster": RaycastEngine(width=16, height=16), "broken": FailingEngine(16, 16)})
    session_host.open(session_open("world", session="fine"))
    session_host.open(session_open("conversation", session="talk"))
    session_host.open(session_open("world", session="doomed", engine="broken"))
    frames, due = session_host.tick()
    assert [frame.session for frame, _ in frames] == ["fine"]
    (error,) = [message for message in due if isinstance(message, SessionError)]
    assert error.session == "doomed" and "failed to step" in error.error
    assert sorted(session_host.sessions) == ["fine", "talk"]
    assert session_host.sessions["talk"].tick == 1
