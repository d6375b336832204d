"""The inference worker process: connects to the platform, announces its engines and slots, heartbeats.

It is the only bridge between the platform and the engines, and it needs no database or Redis: run it on
any machine that can reach the platform's WebSocket endpoint, for example

    python -m inference.worker --url wss://worldloom.example/ws/workers/ --token wlw_… --slots 8

(`manage.py inference_worker` takes the same options). When the connection drops it reconnects with backoff;
a refused token stops it with one clear line, since retrying cannot help. An engine thread that stops answering
stops the heartbeat and the process (exit status 1), so that its supervisor starts a fresh one; inside `serve`,
BackgroundWorker starts a fresh worker instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import logging
import math
import os
import queue
import threading
import time
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgspec
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.client import backoff

from inference import protocol
from inference.engine import Frame, available_engines, create_engine
from inference.language.base import LanguageModel
from inference.language.embedding import default_embedder
from inference.play.host import CONVERSATION, Job, SessionHost
from inference.play.narrator import Narrator, Urgency, job_urgency
from inference.video.encoder import VideoEncoder

# Sessions whose newest frame number a worker remembers after a lost connection.
FRAMES_SENT_KEPT = 10_000
logger = logging.getLogger("inference.worker")


WELCOME_TIMEOUT_SECONDS = 10.0


class TokenRefused(Exception):
    """The platform refused this worker's token."""


class EngineThreadStuck(Exception):
    """One call has held a worker thread past its budget: the thread cannot be taken back, the worker must go."""


@dataclass(frozen=True)
class WorkerConfig:
    """How to reach the platform and what this worker offers."""

    url: str
    token: str
    slots: int = 4
    device: str = "cpu"
    # Longest wait between reconnection attempts. Players wait on it after an outage (of Redis, say) has ended, and
    # one attempt every few seconds from each worker costs a restarting platform nothing.
    max_backoff_seconds: float = 5.0
    # 20 frames a second reads as motion and leaves a CPU worker time to batch several sessions.
    frames_per_second: float = 20.0
    # The characters' and narrator's model: "local" (SmolLM2-135M-Instruct, shipped with the platform), a
    # local transformers model folder, an OpenAI-compatible server's URL (…/v1), or "none".
    language_model: str = "local"
    # torch's CPU threads, on every thread of the worker that runs torch (engines, language model, embedder).
    # Decoding a token of a 135M model is too small to share: on two busy cores one thread gave 34 tokens/s
    # and two gave 4.7, the second spinning on a core that the world model and the web process also want.
    # A dedicated many-core box raises it (see LocalModelConfig.threads).
    torch_threads: int = 1
    # Seconds a reply waits for the platform to send a character's memories before going on without them.
    recall_timeout_seconds: float = 3.0
    # A tick takes about 50 ms and a reopen's replay at most HostConfig.replay_max_seconds (10 s): a call on the
    # engine thread three times longer is not coming back, and every session of the worker waits behind it.
    engine_stuck_seconds: float = 30.0
    # A reply of the local model takes seconds, a remote one's HTTP calls time out in about a minute.
    narrative_stuck_seconds: float = 180.0
    # How often the watchdog looks at the threads (the heartbeat looks too, and beats only while they answer).
    watch_every_seconds: float = 1.0


def torch_threads_set(threads: int) -> None:
    """torch's CPU threads for the calling thread and those it starts from now on.

    torch.set_num_threads is not process-wide once a thread has run torch: a thread that ran an operation
    keeps the count it had then (OpenMP's per-thread setting). So each thread of ours that runs torch sets it.
    """
    import torch

    torch.set_num_threads(threads)


def language_model_loader(choice: str, device: str, threads: int | None = None) -> Callable[[], LanguageModel] | None:
    """What loads the configured language model (on first use), or None for "none"."""
    if choice == "none":
        return None
    if choice.startswith(("http://", "https://")):

        def load_remote() -> LanguageModel:
            from inference.language.openai_compatible import OpenAICompatibleConfig, OpenAICompatibleLanguageModel

            return OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=choice))

        return load_remote

    def load_local() -> LanguageModel:
        from inference.language.local import LocalLanguageModel, LocalModelConfig

        return LocalLanguageModel(
            LocalModelConfig(model_dir=None if choice == "local" else Path(choice), device=device, threads=threads)
        )

    return load_local


class TickSchedule:
    """When the next tick may start: an interval after the last one began (the step's own time included), or
    after an input as soon as half an interval has passed. Ticks move every world on the worker, so without that
    floor the players of many single-player sessions would step them all as fast as they press keys (a Live
    world's inputs never bring a tick forward: SessionHost.input_brings_tick_forward)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.last_started = -math.inf

    def wait(self, now: float, input_waiting: bool) -> float:
        """Seconds from `now` until the next tick may start."""
        gap = self.interval / 2 if input_waiting else self.interval
        return max(self.last_started + gap - now, 0.0)

    def started(self, now: float) -> None:
        self.last_started = now


@dataclass(frozen=True)
class QueuedCall:
    """A call waiting for a SerialThread, and the future its caller holds."""

    future: Future[Any]
    function: Callable[..., Any]
    arguments: tuple[Any, ...]
    about: str | None


class Inbox:
    """What the platform sent that is not yet applied, taken all at once in the order it came. Holds at most
    `most`: beyond that the socket is not read, so the platform's channel for this worker fills and the platform
    refuses new inputs (its players are told), rather than this process keeping whatever comes."""

    def __init__(self, most: int = 1000) -> None:
        self.most = most
        self.messages: list[protocol.PlatformToWorker] = []
        self.changed = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()
        self.closed = False

    async def put(self, message: protocol.PlatformToWorker) -> None:
        while len(self.messages) >= self.most:
            self.room.clear()
            await self.room.wait()
        self.messages.append(message)
        self.changed.set()

    def close(self) -> None:
        """No more will come: `taken` hands over what is left, then nothing."""
        self.closed = True
        self.changed.set()

    async def taken(self) -> list[protocol.PlatformToWorker]:
        """Every message waiting, once there is one; [] once closed and emptied."""
        while not self.messages and not self.closed:
            self.changed.clear()
            await self.changed.wait()
        taken, self.messages = self.messages, []
        self.room.set()
        return taken


class InputsBeforeOpen:
    """Inputs forwarded for a session this worker does not run, kept for its open.

    The platform reads an open's pending inputs from its log, then sends it; an input logged in between is
    forwarded by another thread and may reach this worker before the open, which does not hold it. Answered
    "not running" at once, that input was lost, and the player read an error about a session that was opening.
    Each session's inputs are kept `seconds` at most (then the session is told it is not running: its open
    failed, or it went to another worker), `most` of them, for `sessions` sessions at most."""

    def __init__(self, seconds: float = 5.0, most: int = 256, sessions: int = 64) -> None:
        self.seconds, self.most, self.sessions = seconds, most, sessions
        self.held: dict[str, tuple[float, list[protocol.SessionInput]]] = {}  # by session: since when, what

    def hold(self, message: protocol.SessionInput, now: float) -> bool:
        """Keep `message` for its session's open; False when there is no room for it."""
        since, inputs = self.held.get(message.session, (now, []))
        if len(inputs) >= self.most or (message.session not in self.held and len(self.held) >= self.sessions):
            return False
        inputs.append(message)
        self.held[message.session] = (since, inputs)
        return True

    def taken(self, session: str) -> list[protocol.SessionInput]:
        """The session's kept inputs, in the order they came; forgotten here."""
        return self.held.pop(session, (0.0, []))[1]

    def expired(self, now: float) -> list[str]:
        """The sessions whose first kept input has waited `seconds` for an open; forgotten here."""
        gone = [session for session, (since, _) in self.held.items() if now - since >= self.seconds]
        for session in gone:
            del self.held[session]
        return gone


class SerialThread:
    """One daemon thread that runs the calls given to it, the most urgent first (`Urgency`) and otherwise in
    the order given, and knows how long the current one has run.

    A daemon, unlike a ThreadPoolExecutor's threads (joined at exit): a call stuck in an engine kept the
    process from ever exiting. What the current call is about (a session) names the session a stuck call failed.
    A long call may let the urgent calls waiting run in the middle of it (`urgent_run`), where it holds nothing
    they use: a player's reply does not wait for a beat's choices to be written.
    """

    def __init__(self, name: str) -> None:
        self.calls: queue.PriorityQueue[tuple[int, int, QueuedCall | None]] = queue.PriorityQueue()
        self.numbers = itertools.count()  # ties within an urgency go in the order given (and never compare calls)
        self.busy_since: float | None = None
        self.busy_about: str | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def submit(
        self, function: Callable[..., Any], *arguments: Any, about: str | None = None, urgency: int = Urgency.ROUTINE
    ) -> Future[Any]:
        future: Future[Any] = Future()
        self.calls.put((urgency, next(self.numbers), QueuedCall(future, function, arguments, about)))
        return future

    def busy_with(self, about: str | None) -> None:
        """Name what the running call is about from now on (a call that applies several sessions' messages)."""
        assert threading.current_thread() is self.thread, "busy_with is called by a call this thread runs"
        self.busy_about = about

    def busy_seconds(self, now: float) -> float:
        """How long the call now running has run (0 when the thread waits for work)."""
        since = self.busy_since
        return 0.0 if since is None else max(now - since, 0.0)

    def stop(self) -> None:
        """End the thread once the calls waiting now are done (a stuck one never is; the thread is a daemon)."""
        self.calls.put((Urgency.LAST, next(self.numbers), None))

    def urgent_run(self) -> None:
        """Run the urgent calls waiting now, from inside the current call; on this thread only."""
        assert threading.current_thread() is self.thread, "urgent_run is called by a call this thread runs"
        while True:
            try:
                urgency, number, call = self.calls.get_nowait()
            except queue.Empty:
                return
            if urgency > Urgency.PLAYER_WAITS or call is None:
                self.calls.put((urgency, number, call))
                return
            about, since = self.busy_about, self.busy_since
            started = time.monotonic()
            self._call(call)
            # The interrupted call's time does not count the urgent ones it let run.
            self.busy_about = about
            self.busy_since = None if since is None else since + time.monotonic() - started

    def _run(self) -> None:
        while (call := self.calls.get()[2]) is not None:
            self._call(call)
            self.busy_since = self.busy_about = None

    def _call(self, call: QueuedCall) -> None:
        if not call.future.set_running_or_notify_cancel():
            return
        self.busy_about, self.busy_since = call.about, time.monotonic()
        try:
            result = call.function(*call.arguments)
        except BaseException as error:  # the caller gets it, as from an executor
            call.future.set_exception(error)
        else:
            call.future.set_result(result)


class InferenceWorker:
    """One worker process's connection to the platform, and the sessions it runs."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        torch_threads_set(config.torch_threads)  # engines and the embedder load on this thread
        self.engines = {name: create_engine(name, device=config.device) for name in sorted(available_engines())}
        embedder = default_embedder()
        self.host = SessionHost(self.engines, embedder=embedder)
        # Engines run on one thread of their own: stepping never blocks the connection, and an engine is
        # never entered from two threads (oversubscribed threads were 10x slower in the world-model probe).
        self.engine_thread = SerialThread("engine")
        # The language model gets a thread of its own too: a reply takes seconds, a frame 50 ms.
        self.language_thread = SerialThread("language")
        loader = language_model_loader(config.language_model, config.device, config.torch_threads)
        self.narrator = Narrator(embedder, loader, urgent_run=self.language_thread.urgent_run)
        for thread in (self.engine_thread, self.language_thread):
            thread.submit(torch_threads_set, config.torch_threads)
        self.language_thread.submit(self.narrator.warm_up)
        self.connected = asyncio.Event()
        self.input_arrived = asyncio.Event()
        self.connection: ClientConnection | None = None
        # Inputs applied since the last tick's report (InputsApplied), in the order applied.
        self.applied: list[protocol.SessionApplied] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.recalls: dict[int, asyncio.Future[protocol.SessionRecalled]] = {}
        # The newest frame number sent for each session, kept across a lost connection: a daphne killed between
        # two writes of its newest frame number reopens the session from an older one, and frame numbers must
        # still rise for the browsers that saw the newer frames. Written by the tick loop only.
        self.frames_sent: dict[str, int] = {}
        # A video engine's sessions' encoders, used on the engine thread only. A session opened here anew gets a
        # new one, so its first frame is a key frame (after a failover too).
        self.encoders: dict[str, VideoEncoder] = {}
        self.inputs_before_open = InputsBeforeOpen()  # used on the engine thread only
        self.recall_numbers = itertools.count(1)

    @property
    def free_slots(self) -> int:
        return max(self.config.slots - len(self.host.sessions), 0)

    async def run(self) -> None:
        """Stay connected until cancelled. websockets retries a failed attempt with exponential backoff and this
        loop reconnects at once after a lost connection; a refused token or EngineThreadStuck ends it (another
        attempt would meet the same refusal, or the same stuck thread)."""
        connections = websockets.connect(
            self.config.url,
            additional_headers={"Authorization": f"Bearer {self.config.token}"},
            open_timeout=10,
            max_size=2**22,
            # A busy platform may answer pings late; give up on it only after a minute of silence.
            ping_timeout=60,
            process_exception=self.attempt_failed,
            reconnect_delays=functools.partial(
                backoff, initial_delay=1.0, min_delay=1.0, max_delay=self.config.max_backoff_seconds, factor=2.0
            ),
        )
        # The attempts are an async generator (websockets types them as an iterator): closed here when the worker is
        # cancelled, not left to the loop's finalizer, whose closing task the stopped loop would destroy pending.
        attempts = cast("AsyncGenerator[ClientConnection, None]", aiter(connections))
        async with contextlib.aclosing(attempts):
            async for connection in attempts:
                try:
                    await self.serve(connection)
                except (TimeoutError, OSError, websockets.ConnectionClosed) as error:
                    logger.warning("connection to %s lost (%s); reconnecting", self.config.url, error)
                finally:
                    self.connected.clear()
                    await self.sessions_drop()

    def attempt_failed(self, error: Exception) -> Exception | None:
        """None to try again after a failed connection attempt, or the exception that ends the worker."""
        if isinstance(error, websockets.InvalidStatus) and error.response.status_code in (401, 403):
            return TokenRefused(f"the platform at {self.config.url} refused this worker's token")
        logger.warning("cannot connect to %s (%s); retrying", self.config.url, error)
        return None

    async def serve(self, connection: ClientConnection) -> None:
        """Announce, then heartbeat and tick while handling what the platform sends, until the connection closes."""
        # The platform welcomes a worker as it accepts it; silence is a platform that is not there yet.
        received = await asyncio.wait_for(connection.recv(), WELCOME_TIMEOUT_SECONDS)
        welcome = protocol.decode_from_platform(received if isinstance(received, str) else None)
        if not isinstance(welcome, protocol.PlatformWelcome):
            raise protocol.ProtocolError(f"expected platform.welcome, got {protocol.type_of(welcome)}")
        # Any worker can hold a conversation: it needs no world engine, only the narrator.
        hello = protocol.WorkerHello(
            engines=[*self.engines, CONVERSATION],
            slots=self.config.slots,
            free_slots=self.free_slots,
            device=self.config.device,
            engine_facts={
                name: msgspec.convert(engine.facts, protocol.EngineAnnouncement, from_attributes=True)
                for name, engine in self.engines.items()
            },
        )
        await connection.send(protocol.encode(hello))
        self.connection, self.loop = connection, asyncio.get_running_loop()
        self.applied = []  # a lost connection's reports went with its sessions, which the platform reopens
        self.connected.set()
        logger.info("connected to %s as %s with engines %s", self.config.url, welcome.worker, list(self.engines))
        # Whichever ends first ends the connection: the platform closing it, a failed send, or the watchdog
        # finding a thread stuck (the receiving loop may be the one waiting on it).
        tasks = [
            asyncio.create_task(self.receive(connection)),
            asyncio.create_task(self.heartbeat(connection, welcome.heartbeat_seconds)),
            asyncio.create_task(self.tick_forever(connection)),
            asyncio.create_task(self.threads_watch(connection)),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            self.connection = None
            for waiting in self.recalls.values():
                waiting.cancel()
            self.recalls.clear()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def receive(self, connection: ClientConnection) -> None:
        """Apply what the platform sends, in the order it was sent, until the connection closes.

        The messages that arrive while the engine thread draws a tick are applied together, in one call on it
        after the tick: a Live world's crowd sends a hundred inputs a second, and with a call for each, every
        input would wait for the one before it and for the tick that one met."""
        inbox = Inbox()
        reading = asyncio.create_task(self.inbox_fill(connection, inbox))
        try:
            while messages := await inbox.taken():
                await self.replies_send(connection, await self.on_engine_thread(self.handle_all, messages))
                if any(
                    isinstance(message, protocol.SessionInput) and self.host.input_brings_tick_forward(message.session)
                    for message in messages
                ):
                    self.input_arrived.set()
            reading.result()  # how the connection ended, if not cleanly
        finally:
            reading.cancel()

    async def heartbeat(self, connection: ClientConnection, interval_seconds: float) -> None:
        """Tell the platform this worker serves, while its threads answer: a worker whose engine thread is stuck
        kept beating, so the platform went on sending it sessions that never moved."""
        while True:
            await asyncio.sleep(interval_seconds)
            if self.threads_stuck() is not None:
                continue  # threads_watch ends the connection, and tells the player why
            await connection.send(protocol.encode(protocol.WorkerHeartbeat(free_slots=self.free_slots)))

    async def threads_watch(self, connection: ClientConnection) -> None:
        """End the connection (EngineThreadStuck) once a thread has been stuck past its budget; the player of the
        session it was stuck on is told why their session stopped."""
        while True:
            await asyncio.sleep(self.config.watch_every_seconds)
            stuck = self.threads_stuck()
            if stuck is None:
                continue
            thread, reason = stuck
            if thread.busy_about is not None:
                failed = protocol.SessionError(
                    session=thread.busy_about, error="this session stopped its worker; the platform moves it to another"
                )
                with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                    await asyncio.wait_for(connection.send(protocol.encode(failed)), timeout=1)
            raise EngineThreadStuck(reason)

    def threads_stuck(self) -> tuple[SerialThread, str] | None:
        """The engine or language thread, if either has run one call past its budget, and a line saying so."""
        now = time.monotonic()
        for thread, budget in (
            (self.engine_thread, self.config.engine_stuck_seconds),
            (self.language_thread, self.config.narrative_stuck_seconds),
        ):
            busy = thread.busy_seconds(now)
            if busy > budget:
                return thread, f"the {thread.thread.name} thread has run one call for {busy:.0f} s (budget {budget:g})"
        return None

    async def sessions_drop(self) -> None:
        """Forget every session once the connection is gone: the platform reassigns a lost worker's sessions
        from their snapshots, and holding on to them here would run them twice. Never waits on a stuck thread,
        nor longer than a thread's budget on a busy one."""
        if self.engine_thread.busy_seconds(time.monotonic()) > self.config.engine_stuck_seconds:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.on_engine_thread(self.close_all), self.config.engine_stuck_seconds)

    async def inbox_fill(self, connection: ClientConnection, inbox: Inbox) -> None:
        """Put what the platform sends in `inbox` until the connection closes; a recall's answer goes straight to
        the reply waiting for it, on the language thread."""
        try:
            async for text in connection:
                try:
                    message = protocol.decode_from_platform(text if isinstance(text, str) else None)
                except protocol.ProtocolError as error:
                    logger.warning("ignoring a message from the platform: %s", error)
                    continue
                if isinstance(message, protocol.SessionRecalled):
                    self.recalled(message)
                else:
                    await inbox.put(message)
        finally:
            inbox.close()

    async def tick_forever(self, connection: ClientConnection) -> None:
        """Step every session once per tick, as one batch, and send the frames and any due snapshots.

        A single player's input cuts the wait short (see TickSchedule and SessionHost.input_brings_tick_forward),
        so a key shows on screen after one step rather than after the rest of the frame interval.
        """
        schedule = TickSchedule(1 / self.config.frames_per_second)
        while True:
            delay = schedule.wait(time.monotonic(), input_waiting=self.input_arrived.is_set())
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.input_arrived.wait(), timeout=delay)
                if self.input_arrived.is_set():
                    await asyncio.sleep(schedule.wait(time.monotonic(), input_waiting=True))
            self.input_arrived.clear()
            schedule.started(time.monotonic())
            await self.applied_report(connection)
            if self.inputs_before_open.held:
                await self.replies_send(connection, await self.on_engine_thread(self.inputs_never_opened))
            if not self.host.sessions:
                continue
            frames, messages = await self.on_engine_thread(self.tick_encoded)
            self.jobs_start(await self.on_engine_thread(self.host.take_jobs))
            for session, number, encoded in frames:
                await connection.send(encoded)
                self.frame_sent(session, number)
            await self.replies_send(connection, messages)

    async def replies_send(self, connection: ClientConnection, replies: list[protocol.WorkerReply]) -> None:
        """Send the host's replies; an applied input waits for the next tick's report with the others
        (applied_report), whether a forwarded input or a tick applied it."""
        for reply in replies:
            if isinstance(reply, protocol.SessionApplied):
                self.applied.append(reply)
            else:
                await connection.send(protocol.encode(reply))

    def tick_encoded(self) -> tuple[list[tuple[str, int, bytes]], list[protocol.WorkerReply]]:
        """Step every session (on the engine thread), and each frame as the wire carries it: its session, its
        number and its bytes. A video engine's pictures are encoded here, once for all of a session's viewers."""
        frames, messages = self.host.tick()
        encoded = [(frame.session, frame.number, self.frame_wire(frame, sequence)) for frame, sequence in frames]
        for session in [session for session in self.encoders if session not in self.host.sessions]:
            del self.encoders[session]  # closed, or failed and closed
        return encoded, messages

    def frame_wire(self, frame: Frame, sequence: int) -> bytes:
        engine = self.host.sessions[frame.session].engine
        assert engine is not None  # a conversation steps no engine, so it has no frames
        facts = engine.facts
        if facts.codec == "jpeg":
            codec, picture, key = "jpeg", frame.jpeg, True
        else:
            if frame.pixels is None:
                raise ValueError(f"engine {engine.name!r} streams {facts.codec} but its frame has no pixels")
            encoder = self.encoders.get(frame.session)
            if encoder is None:
                encoder = self.encoders[frame.session] = VideoEncoder(
                    facts.codec,
                    width=facts.width,
                    height=facts.height,
                    frames_per_second=round(self.config.frames_per_second),
                )
            codec = encoder.codec  # the engine's, or the fallback where this build cannot encode it
            picture, key = encoder.encode(frame.pixels)
        return protocol.frame_encode(
            session=frame.session, number=frame.number, sequence=sequence, codec=codec, key=key, picture=picture
        )

    async def applied_report(self, connection: ClientConnection) -> None:
        """Report the inputs applied since the last tick, of every session, in one message: before the frames that
        show them, as each report went before."""
        if self.applied:
            report, self.applied = protocol.InputsApplied(applied=self.applied), []
            await connection.send(protocol.encode(report))

    def frame_sent(self, session: str, number: int) -> None:
        self.frames_sent[session] = number
        if len(self.frames_sent) > FRAMES_SENT_KEPT:
            del self.frames_sent[next(iter(self.frames_sent))]  # the session that sent its first frame longest ago

    def handle_all(self, messages: list[protocol.PlatformToWorker]) -> list[protocol.WorkerReply]:
        """Apply messages in the order given (on the engine thread); their replies, in order."""
        replies = []
        for message in messages:
            self.engine_thread.busy_with(session_of(message))  # a message stuck in an engine names its session
            replies += self.handle(message)
        return replies

    def handle(self, message: protocol.PlatformToWorker) -> list[protocol.WorkerReply]:
        """Apply one platform message to the hosted sessions (on the engine thread); return the replies.

        A message that fails fails its own session, which the player may open again; any other session goes on.
        An unexpected error here used to end the connection, and with it every session of the worker.
        """
        try:
            replies = self.apply(message)
        except Exception as error:
            logger.exception("could not apply %s; its session stops", protocol.type_of(message))
            session = session_of(message)
            if session in self.host.sessions:
                self.host.close(session)
            replies = [
                protocol.SessionError(
                    session=session,
                    error=f"this session stopped on its worker ({type(error).__name__}); open it again to retry",
                )
            ]
        finally:
            self.jobs_start(self.host.take_jobs())
        return replies

    def apply(self, message: protocol.PlatformToWorker) -> list[protocol.WorkerReply]:
        if isinstance(message, protocol.PlatformError):
            logger.error("platform reported: %s", message.error)
            return []
        session = session_of(message)
        if isinstance(message, protocol.SessionKeyFrame):
            encoder = self.encoders.get(message.session)
            if encoder is not None:  # none: a JPEG session, or one not yet stepped, whose first frame is a key
                encoder.key_frame_ask()
            return []
        try:
            running = session in self.host.sessions
            if isinstance(message, protocol.SessionInput) and not running:
                # Its open may be behind it on the wire (InputsBeforeOpen); otherwise it stays closed here until
                # the platform opens it again.
                held = self.inputs_before_open.hold(message, time.monotonic())
                return [] if held else [not_running(message.session)]
            if isinstance(message, protocol.SessionRefresh) and not running:
                return [not_running(message.session)]
            if isinstance(message, protocol.SessionOpen) and running:
                return self.reopen_hosted(message)
            if isinstance(message, protocol.SessionOpen):
                self.encoders.pop(message.session, None)  # an earlier run of it here: its viewers' pictures differ
                # Replayed at least to the newest frame this worker showed, so that its numbers go on rising.
                shown = self.frames_sent.get(message.session, 0)
                if shown > (message.target_tick or 0):
                    message = msgspec.structs.replace(message, target_tick=shown)
                return self.host.open(message) + self.inputs_held_apply(message.session)
            if isinstance(message, protocol.SessionInput):
                return self.host.input_forwarded(message.session, message.sequence, message.input)
            if isinstance(message, protocol.SessionRefresh):
                return self.host.refresh(message.session)
            if isinstance(message, protocol.SessionClose):
                self.inputs_before_open.taken(message.session)
                self.host.close(message.session)
                self.language_thread.submit(self.narrator.forget, message.session)
                return []
        except (KeyError, ValueError) as error:
            logger.exception("could not apply %s", protocol.type_of(message))
            return [protocol.SessionError(session=session, error=f"worker: {error}")]
        logger.warning("ignoring a %s message this worker does not handle", protocol.type_of(message))
        return []

    def reopen_hosted(self, message: protocol.SessionOpen) -> list[protocol.WorkerReply]:
        """The platform opens a session this worker already hosts (a browser arrived, or a restarted daphne
        or channel layer may have lost messages): say where its story stands (to the arriving browser alone, when
        the open names it) and apply the logged inputs that never arrived; the host skips those it applied already."""
        session = message.session
        replies: list[protocol.WorkerReply] = [
            protocol.SessionOpened(session=session, tick=self.host.sessions[session].tick, viewer=message.viewer)
        ]
        replies += self.host.refresh(session, message.viewer)
        for pending in message.pending:
            replies += self.host.input(session, pending.sequence, pending.input)
        return replies + self.host.early_inputs_apply(session)

    def inputs_held_apply(self, session: str) -> list[protocol.WorkerReply]:
        """After a session opened here: the inputs that reached this worker before its open, in the platform's
        order (the ones its pending inputs held already are skipped). None when the open failed: it said why."""
        held = self.inputs_before_open.taken(session)
        if session not in self.host.sessions:
            return []
        return [reply for each in held for reply in self.host.input_forwarded(session, each.sequence, each.input)]

    def inputs_never_opened(self) -> list[protocol.WorkerReply]:
        """For each session whose kept inputs waited past their time for an open: it is not running here."""
        return [not_running(session) for session in self.inputs_before_open.expired(time.monotonic())]

    def close_all(self) -> None:
        self.inputs_before_open.held.clear()  # the platform reopens the sessions with their logged inputs
        self.encoders.clear()
        for session in list(self.host.sessions):
            self.host.close(session)
            self.language_thread.submit(self.narrator.forget, session)

    # Narrative work, on the language thread, and the link it reaches the platform and the host by.

    def jobs_start(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.language_thread.submit(self.narrator.run, job, self, about=job.session, urgency=job_urgency(job))

    def send(self, message: protocol.WorkerToPlatform) -> None:
        """Send from any thread; dropped when the connection is gone (the platform reassigns the session)."""
        connection, loop = self.connection, self.loop
        if connection is None or loop is None:
            return
        asyncio.run_coroutine_threadsafe(connection.send(protocol.encode(message)), loop)

    def recall(
        self, *, session: str, character: int | None, speaker: str | None, query: bytes, recent: list[str]
    ) -> protocol.SessionRecalled | None:
        """Ask the platform for a character's memories and lore (from the language thread); None on no answer."""
        loop = self.loop
        if loop is None or self.connection is None:
            return None
        number = next(self.recall_numbers)
        request = protocol.SessionRecall(
            request=number, session=session, character=character, speaker=speaker, query=query, recent=recent
        )
        try:
            return asyncio.run_coroutine_threadsafe(self.recall_request(request), loop).result(
                self.config.recall_timeout_seconds + 1
            )
        except (TimeoutError, asyncio.CancelledError, websockets.ConnectionClosed):
            logger.warning("no memories arrived for session %s; replying without them", session)
            return None

    async def recall_request(self, request: protocol.SessionRecall) -> protocol.SessionRecalled:
        answer: asyncio.Future[protocol.SessionRecalled] = asyncio.get_running_loop().create_future()
        self.recalls[request.request] = answer
        try:
            assert self.connection is not None
            await self.connection.send(protocol.encode(request))
            return await asyncio.wait_for(answer, self.config.recall_timeout_seconds)
        finally:
            self.recalls.pop(request.request, None)

    def recalled(self, message: protocol.SessionRecalled) -> None:
        waiting = self.recalls.get(message.request)
        if waiting is not None and not waiting.done():
            waiting.set_result(message)

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None:
        self.engine_thread.submit(self.host.conversation_record, session, character, said, reply)

    async def on_engine_thread(self, function: Callable[..., Any], *arguments: Any, about: str | None = None) -> Any:
        return await asyncio.wrap_future(self.engine_thread.submit(function, *arguments, about=about))

    def threads_stop(self) -> None:
        self.engine_thread.stop()
        self.language_thread.stop()


def not_running(session: str) -> protocol.SessionError:
    return protocol.SessionError(session=session, error="this session is not running; open it again to restore it")


def session_of(message: protocol.PlatformToWorker) -> str | None:
    """The session a platform message is about (None: one about the connection)."""
    return getattr(message, "session", None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a Worldloom inference worker.")
    add_arguments(parser)
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run_until_interrupted(config_from_arguments(arguments))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="the platform's worker endpoint, ws(s)://HOST/ws/workers/")
    parser.add_argument("--token", required=True, help="this worker's token (manage.py worker_token NAME)")
    parser.add_argument("--slots", type=int, default=4, help="how many sessions this worker runs at once")
    parser.add_argument("--device", default="cpu", help="torch device for the engines: cpu, cuda, cuda:1 …")
    parser.add_argument(
        "--language-model",
        default=os.environ.get("WORLDLOOM_LANGUAGE_MODEL", "local"),
        help="the characters' model: local (SmolLM2-135M), a model folder, an OpenAI-compatible URL, or none "
        "(default: $WORLDLOOM_LANGUAGE_MODEL, else local)",
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=int(os.environ.get("WORLDLOOM_TORCH_THREADS", "1")),
        help="torch's CPU threads on each worker thread (default: $WORLDLOOM_TORCH_THREADS, else 1)",
    )


def config_from_arguments(arguments: argparse.Namespace) -> WorkerConfig:
    return WorkerConfig(
        url=arguments.url,
        token=arguments.token,
        slots=arguments.slots,
        device=arguments.device,
        language_model=arguments.language_model,
        torch_threads=arguments.torch_threads,
    )


def run_until_interrupted(config: WorkerConfig) -> None:
    """Run a worker until Ctrl-C; a refused token or a stuck engine thread exits with status 1 and one line
    (a supervisor restarts the process; the stuck thread, a daemon, does not hold up the exit)."""
    try:
        asyncio.run(InferenceWorker(config).run())
    except (TokenRefused, EngineThreadStuck) as error:
        raise SystemExit(f"inference worker: {error}") from None
    except KeyboardInterrupt:
        logger.info("stopped")


class BackgroundWorker:
    """An inference worker on a thread of its own, for running inside another process (`manage.py serve`).

    A worker whose engine thread is stuck is replaced by a fresh one (new engines, new threads), as a
    supervisor restarts a separate worker process; the stuck thread is a daemon and is left behind.
    """

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.worker = InferenceWorker(config)
        self.restarts = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="inference-worker", daemon=True)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout_seconds: float = 3.0) -> None:
        if self.task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed already
                self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout_seconds)

    async def run_restarting(self) -> None:
        while True:
            try:
                await self.worker.run()
            except EngineThreadStuck as error:
                logger.error("inference worker restarts: %s", error)
                self.worker.threads_stop()
                self.restarts += 1
                self.worker = InferenceWorker(self.config)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self.run_restarting())
        try:
            self.loop.run_until_complete(self.task)
        except asyncio.CancelledError:
            pass
        except TokenRefused as error:
            logger.error("%s", error)
        finally:
            self.loop.close()


if __name__ == "__main__":
    main()
