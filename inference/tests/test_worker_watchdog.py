"""A worker whose engine thread stops answering stops claiming health and goes, to be started afresh."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.server import Server, ServerConnection, serve

from inference import protocol, worker
from inference.engine import RaycastEngine
from inference.language.embedding import HashedWordsEmbedder
from inference.play.host import CONVERSATION, SessionHost

SESSION = "5b0c4f7e-6c3b-4e0f-9a51-0d5e2b8f1a77"
ENGINE_STUCK_SECONDS = 1.0


class FakePlatform:
    """The platform's side of /ws/workers/: welcomes every worker, opens one conversation, keeps what it hears."""

    def __init__(self) -> None:
        self.received: list[tuple[float, protocol.WorkerToPlatform]] = []
        self.server: Server = serve(self.handler, "127.0.0.1", 0)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}/ws/workers/"

    def handler(self, connection: ServerConnection) -> None:
        connection.send(protocol.encode(protocol.PlatformWelcome(worker="test", heartbeat_seconds=1)))
        for text in connection:
            if not isinstance(text, str):
                continue  # a frame
            message = protocol.decode_from_worker(text)
            self.received.append((time.monotonic(), message))
            if isinstance(message, protocol.WorkerHello):
                opening = protocol.SessionOpen(session=SESSION, engine=CONVERSATION, spec={})
                connection.send(protocol.encode(opening))

    def times_of(self, kind: str) -> list[float]:
        return [at for at, message in self.received if protocol.type_of(message) == kind]

    def messages_of(self, kind: str) -> list[protocol.WorkerToPlatform]:
        return [message for _, message in self.received if protocol.type_of(message) == kind]

    def heard(self, kind: str, *, within_seconds: float) -> list[protocol.WorkerToPlatform]:
        """The messages of `kind`, once one has come: a worker's last words before it exits are read on the
        server's thread, which may not have got to them when the worker's own call returns."""
        deadline = time.monotonic() + within_seconds
        while not self.messages_of(kind) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages_of(kind)


@pytest.fixture
def platform() -> Iterator[FakePlatform]:
    fake = FakePlatform()
    yield fake
    fake.server.shutdown()


@pytest.fixture
def small_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers get the raycaster and the hashed-words embedder only, so that one starts in a blink."""
    monkeypatch.setattr(worker, "available_engines", lambda: {"raycaster": RaycastEngine})
    monkeypatch.setattr(worker, "default_embedder", HashedWordsEmbedder)


@pytest.fixture
def first_open_never_returns(small_engines: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The first session.open a worker applies hangs its engine thread (as a conversation's reopen did); the
    times it began are yielded."""
    release = threading.Event()
    started: list[float] = []
    original_open = SessionHost.open

    def open_hanging_the_first_time(
        self: SessionHost, message: protocol.SessionOpen
    ) -> list[protocol.WorkerToPlatform]:
        started.append(time.monotonic())
        if len(started) == 1:
            release.wait(60)
        return original_open(self, message)

    monkeypatch.setattr(SessionHost, "open", open_hanging_the_first_time)
    yield started
    release.set()


def config(platform: FakePlatform) -> worker.WorkerConfig:
    return worker.WorkerConfig(
        url=platform.url,
        token="test",
        language_model="none",
        engine_stuck_seconds=ENGINE_STUCK_SECONDS,
        watch_every_seconds=0.1,
    )


@pytest.mark.timeout(30)
def test_a_worker_whose_engine_thread_is_stuck_stops_beating_tells_the_player_and_exits_non_zero(
    platform: FakePlatform, first_open_never_returns: list[float]
) -> None:
    with pytest.raises(SystemExit) as exited:
        worker.run_until_interrupted(config(platform))
    stuck_at = first_open_never_returns[0]
    assert exited.value.code != 0 and "engine thread" in str(exited.value.code)
    assert time.monotonic() - stuck_at < ENGINE_STUCK_SECONDS + 3
    # No heartbeat claims health once the engine thread is past its budget.
    assert all(at < stuck_at + ENGINE_STUCK_SECONDS + 0.2 for at in platform.times_of("worker.heartbeat"))
    (told,) = platform.heard("session.error", within_seconds=2)
    assert isinstance(told, protocol.SessionError)
    assert told.session == SESSION and "stopped its worker" in told.error


@pytest.mark.timeout(30)
def test_the_in_process_worker_of_serve_is_started_afresh_when_its_engine_thread_is_stuck(
    platform: FakePlatform, first_open_never_returns: list[float]
) -> None:
    background = worker.BackgroundWorker(config(platform))
    background.start()
    try:
        platform.heard("session.opened", within_seconds=15)
        assert background.restarts == 1
        assert len(platform.messages_of("worker.hello")) == 2
        # The fresh worker opened the session the stuck one could not, and beats again.
        assert platform.messages_of("session.opened")[0] == protocol.SessionOpened(session=SESSION, tick=0)
        beats_before = len(platform.times_of("worker.heartbeat"))
        time.sleep(1.5)
        assert len(platform.times_of("worker.heartbeat")) > beats_before
    finally:
        background.stop()
    assert not background.thread.is_alive()


def test_a_message_that_fails_fails_its_own_session_and_the_others_go_on(
    small_engines: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    original_input = SessionHost.input

    def input_failing_for_broken(self: SessionHost, session: str, sequence: int, given: dict[str, Any]) -> Any:
        if session == "broken":
            raise RuntimeError("a bug in a narrative step")
        return original_input(self, session, sequence, given)

    monkeypatch.setattr(SessionHost, "input", input_failing_for_broken)
    inference_worker = worker.InferenceWorker(worker.WorkerConfig(url="ws://unused/", token="t", language_model="none"))
    host = inference_worker.host
    for session in ("broken", "fine"):
        host.open(protocol.SessionOpen(session=session, engine="raycaster", spec={"seed": 1, "size": 8}))
    key = {"type": "key_down", "key": "KeyW"}
    (failed,) = inference_worker.handle(protocol.SessionInput(session="broken", sequence=1, input=key))
    assert isinstance(failed, protocol.SessionError) and "open it again" in failed.error
    assert sorted(host.sessions) == ["fine"]
    applied = inference_worker.handle(protocol.SessionInput(session="fine", sequence=1, input=key))
    assert isinstance(applied[0], protocol.SessionApplied)
    # Kept a while for an open that may be behind it on the wire; none comes, so the session is told why.
    assert inference_worker.handle(protocol.SessionInput(session="broken", sequence=2, input=key)) == []
    assert inference_worker.inputs_never_opened() == []
    inference_worker.inputs_before_open.seconds = 0
    (closed,) = inference_worker.inputs_never_opened()
    assert isinstance(closed, protocol.SessionError) and "not running" in closed.error
    inference_worker.threads_stop()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    logged=st.integers(min_value=1, max_value=6),
    pending_read=st.integers(min_value=0, max_value=6),
    overtaking=st.lists(st.integers(min_value=1, max_value=6), max_size=8),
)
def test_inputs_that_reach_the_worker_before_their_sessions_open_are_applied_once_each_in_order(
    small_engines: None, logged: int, pending_read: int, overtaking: list[int]
) -> None:
    """The platform read the open's pending inputs when `pending_read` of the `logged` ones were in the log; the
    others, and any forwarded twice, reached the worker before the open. Every logged input is applied once, in
    the log's order."""
    pending_read = min(pending_read, logged)
    late = list(range(pending_read + 1, logged + 1))
    forwarded = sorted([*late, *(number for number in overtaking if number <= logged)])
    inference_worker = worker.InferenceWorker(worker.WorkerConfig(url="ws://unused/", token="t", language_model="none"))
    key = {"type": "key_down", "key": "KeyW"}
    replies = []
    for number in forwarded:
        replies += inference_worker.handle(protocol.SessionInput(session="s", sequence=number, input=key))
    opening = protocol.SessionOpen(
        session="s",
        engine="raycaster",
        spec={"seed": 1, "size": 8},
        pending=[protocol.PendingInput(sequence=number, input=key) for number in range(1, pending_read + 1)],
    )
    replies += inference_worker.handle(opening)
    applied = [reply.sequence for reply in replies if isinstance(reply, protocol.SessionApplied)]
    assert applied == list(range(1, logged + 1))
    assert not [reply for reply in replies if isinstance(reply, protocol.SessionError)]
    inference_worker.threads_stop()


def test_a_reopen_naming_a_viewer_answers_that_viewer_alone_and_a_plain_one_answers_everyone(
    small_engines: None,
) -> None:
    inference_worker = worker.InferenceWorker(worker.WorkerConfig(url="ws://unused/", token="t", language_model="none"))
    story = {"title": "Hall", "start_beat": "hall", "beats": [{"name": "hall", "scene": "A hall.", "choices": []}]}
    opening = protocol.SessionOpen(session="s", engine="raycaster", spec={"seed": 1, "size": 8}, story=story)
    inference_worker.handle(opening)

    arrived = inference_worker.handle(msgspec.structs.replace(opening, viewer="signed-address"))
    again = inference_worker.handle(opening)

    kinds = ["session.opened", "session.narration", "session.choices"]
    assert [protocol.type_of(message) for message in arrived] == kinds
    assert [getattr(message, "viewer", None) for message in arrived] == ["signed-address"] * 3
    assert [protocol.type_of(message) for message in again] == kinds
    assert [getattr(message, "viewer", None) for message in again] == [None] * 3
    inference_worker.threads_stop()


class RecordingConnection:
    """Stands for the worker's socket: yields what the platform sent, keeps what the worker sends."""

    def __init__(self, incoming: list[protocol.PlatformToWorker]) -> None:
        self.incoming = [protocol.encode(message) for message in incoming]
        self.sent: list[protocol.WorkerToPlatform] = []

    def __aiter__(self) -> AsyncIterator[str]:
        return self.messages()

    async def messages(self) -> AsyncIterator[str]:
        for text in self.incoming:
            yield text

    async def send(self, text: str) -> None:
        self.sent.append(protocol.decode_from_worker(text))


@pytest.mark.asyncio
async def test_the_inputs_applied_between_two_ticks_of_every_session_are_reported_in_one_message(
    small_engines: None,
) -> None:
    inference_worker = worker.InferenceWorker(worker.WorkerConfig(url="ws://unused/", token="t", language_model="none"))
    for session in ("a", "b"):
        inference_worker.handle(protocol.SessionOpen(session=session, engine="raycaster", spec={"seed": 1, "size": 8}))
    key = {"type": "key_down", "key": "KeyW"}
    inputs = [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3)]
    connection = RecordingConnection(
        [protocol.SessionInput(session=session, sequence=sequence, input=key) for session, sequence in inputs]
    )

    await inference_worker.receive(connection)  # type: ignore[arg-type]
    assert connection.sent == []
    await inference_worker.applied_report(connection)  # type: ignore[arg-type]
    await inference_worker.applied_report(connection)  # type: ignore[arg-type]

    (report,) = connection.sent
    assert isinstance(report, protocol.InputsApplied)
    assert [(applied.session, applied.sequence) for applied in report.applied] == inputs
    inference_worker.threads_stop()


@pytest.mark.asyncio
async def test_inputs_that_arrive_while_the_engine_thread_is_busy_are_applied_together_in_the_order_sent(
    small_engines: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    inference_worker = worker.InferenceWorker(worker.WorkerConfig(url="ws://unused/", token="t", language_model="none"))
    for session in ("a", "b"):
        inference_worker.handle(protocol.SessionOpen(session=session, engine="raycaster", spec={"seed": 1, "size": 8}))
    key = {"type": "key_down", "key": "KeyW"}
    inputs = [(session, sequence) for sequence in range(1, 31) for session in ("a", "b")]
    connection = RecordingConnection(
        [protocol.SessionInput(session=session, sequence=sequence, input=key) for session, sequence in inputs]
    )
    calls: list[list[tuple[str, int]]] = []
    handle_all = inference_worker.handle_all

    def recorded(messages: list[Any]) -> list[protocol.WorkerReply]:
        calls.append([(message.session, message.sequence) for message in messages])
        return handle_all(messages)

    monkeypatch.setattr(inference_worker, "handle_all", recorded)
    drawing = threading.Event()
    inference_worker.engine_thread.submit(drawing.wait, 10)  # a tick being drawn while the inputs come

    receiving = asyncio.create_task(inference_worker.receive(connection))  # type: ignore[arg-type]
    await asyncio.sleep(0.2)
    drawing.set()
    await asyncio.wait_for(receiving, 10)
    await inference_worker.applied_report(connection)  # type: ignore[arg-type]
    await inference_worker.applied_report(connection)  # type: ignore[arg-type]

    assert len(calls) <= 2, f"60 inputs took {len(calls)} calls on the engine thread"
    assert [each for call in calls for each in call] == inputs
    (report,) = connection.sent
    assert isinstance(report, protocol.InputsApplied)
    assert [(applied.session, applied.sequence) for applied in report.applied] == inputs
    inference_worker.threads_stop()


@pytest.mark.asyncio
async def test_a_full_inbox_takes_no_more_until_it_is_emptied() -> None:
    inbox = worker.Inbox(most=2)
    messages = [protocol.SessionRefresh(session=f"s{number}") for number in range(3)]
    for message in messages[:2]:
        await inbox.put(message)
    third = asyncio.create_task(inbox.put(messages[2]))
    await asyncio.sleep(0.05)
    assert not third.done()  # the socket is not read while the inbox is full
    assert await inbox.taken() == messages[:2]
    await asyncio.wait_for(third, 1)
    assert await inbox.taken() == messages[2:]
