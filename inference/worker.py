"""The inference worker process: connects to the platform, announces its engines and slots, heartbeats.

It is the only bridge between the platform and the engines, and it needs no database or Redis: run it on
any machine that can reach the platform's WebSocket endpoint, for example

    python -m inference.worker --url wss://worldloom.example/ws/workers/ --token wlw_… --slots 8

(`manage.py inference_worker` takes the same options). When the connection drops it reconnects with backoff;
a refused token stops it with one clear line, since retrying cannot help.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from inference import protocol
from inference.engine import available_engines, create_engine
from inference.language.base import LanguageModel
from inference.language.embedding import default_embedder
from inference.play.host import CONVERSATION, Job, SessionHost
from inference.play.narrator import Narrator

logger = logging.getLogger("inference.worker")


class TokenRefused(Exception):
    """The platform refused this worker's token."""


@dataclass(frozen=True)
class WorkerConfig:
    """How to reach the platform and what this worker offers."""

    url: str
    token: str
    slots: int = 4
    device: str = "cpu"
    # Longest wait between reconnection attempts: long enough not to hammer a platform that is restarting.
    max_backoff_seconds: float = 30.0
    # 20 frames a second reads as motion and leaves a CPU worker time to batch several sessions.
    frames_per_second: float = 20.0
    # The characters' and narrator's model: "local" (SmolLM2-135M-Instruct, shipped with the platform), a
    # local transformers model folder, an OpenAI-compatible server's URL (…/v1), or "none".
    language_model: str = "local"
    # Seconds a reply waits for the platform to send a character's memories before going on without them.
    recall_timeout_seconds: float = 3.0


def language_model_loader(choice: str, device: str) -> Callable[[], LanguageModel] | None:
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
            LocalModelConfig(model_dir=None if choice == "local" else Path(choice), device=device)
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


class InferenceWorker:
    """One worker process's connection to the platform, and the sessions it runs."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.engines = {name: create_engine(name, device=config.device) for name in sorted(available_engines())}
        embedder = default_embedder()
        self.host = SessionHost(self.engines, embedder=embedder)
        self.narrator = Narrator(embedder, language_model_loader(config.language_model, config.device))
        # Engines run on one thread of their own: stepping never blocks the connection, and an engine is
        # never entered from two threads (oversubscribed threads were 10x slower in the world-model probe).
        self.engine_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        # The language model gets a thread of its own too: a reply takes seconds, a frame 50 ms.
        self.language_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="language")
        self.language_thread.submit(self.narrator.warm_up)
        self.connected = asyncio.Event()
        self.input_arrived = asyncio.Event()
        self.connection: ClientConnection | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.recalls: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.recall_numbers = itertools.count(1)

    @property
    def free_slots(self) -> int:
        return max(self.config.slots - len(self.host.sessions), 0)

    async def run(self) -> None:
        """Stay connected until cancelled, reconnecting with exponential backoff."""
        backoff = 1.0
        while True:
            try:
                async with websockets.connect(
                    self.config.url,
                    additional_headers={"Authorization": f"Bearer {self.config.token}"},
                    open_timeout=10,
                    max_size=2**22,
                    # A busy platform may answer pings late; give up on it only after a minute of silence.
                    ping_timeout=60,
                ) as connection:
                    backoff = 1.0
                    await self.serve(connection)
            except websockets.InvalidStatus as error:
                if error.response.status_code in (401, 403):
                    raise TokenRefused(f"the platform at {self.config.url} refused this worker's token") from None
                logger.warning("platform answered %s; retrying in %.0f s", error.response.status_code, backoff)
            except (TimeoutError, OSError, websockets.ConnectionClosed) as error:
                logger.warning("connection to %s lost (%s); retrying in %.0f s", self.config.url, error, backoff)
            finally:
                self.connected.clear()
                # The platform reassigns a lost worker's sessions from their snapshots; holding on to them
                # here would run them twice.
                await self.on_engine_thread(self.close_all)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.config.max_backoff_seconds)

    async def serve(self, connection: ClientConnection) -> None:
        """Announce, then heartbeat and tick while handling what the platform sends, until the connection closes."""
        welcome = protocol.decode(await connection.recv())
        if welcome["type"] != "platform.welcome":
            raise protocol.ProtocolError(f"expected platform.welcome, got {welcome['type']}")
        heartbeat_seconds = float(welcome["heartbeat_seconds"])
        # Any worker can hold a conversation: it needs no world engine, only the narrator.
        hello = protocol.hello_message(
            engines=[*self.engines, CONVERSATION], slots=self.config.slots, free_slots=self.free_slots,
            device=self.config.device,
        )  # fmt: skip
        await connection.send(protocol.encode(hello))
        self.connection, self.loop = connection, asyncio.get_running_loop()
        self.connected.set()
        logger.info("connected to %s as %s with engines %s", self.config.url, welcome["worker"], list(self.engines))
        background = [
            asyncio.create_task(self.heartbeat(connection, heartbeat_seconds)),
            asyncio.create_task(self.tick_forever(connection)),
        ]
        try:
            async for text in connection:
                message = protocol.decode(text if isinstance(text, str) else None)
                if message["type"] == "session.recalled":
                    self.recalled(message)
                    continue
                for reply in await self.on_engine_thread(self.handle, message):
                    await connection.send(protocol.encode(reply))
                if message["type"] == "session.input" and self.host.input_brings_tick_forward(message["session"]):
                    self.input_arrived.set()
        finally:
            self.connection = None
            for waiting in self.recalls.values():
                waiting.cancel()
            self.recalls.clear()
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def heartbeat(self, connection: ClientConnection, interval_seconds: float) -> None:
        while True:
            await asyncio.sleep(interval_seconds)
            await connection.send(protocol.encode(protocol.heartbeat_message(free_slots=self.free_slots)))

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
            if not self.host.sessions:
                continue
            frames, messages = await self.on_engine_thread(self.host.tick)
            self.jobs_start(await self.on_engine_thread(self.host.take_jobs))
            for frame, sequence in frames:
                encoded = protocol.frame_encode(
                    session=frame.session, number=frame.number, sequence=sequence, jpeg=frame.jpeg
                )
                await connection.send(encoded)
            for message in messages:
                await connection.send(protocol.encode(message))

    def handle(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Apply one platform message to the hosted sessions (on the engine thread); return the replies."""
        try:
            replies = self.apply(message)
        finally:
            self.jobs_start(self.host.take_jobs())
        return replies

    def apply(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        kind = message["type"]
        try:
            if kind == "session.open" and message["session"] in self.host.sessions:
                return self.reopen_hosted(message)
            if kind == "session.open":
                return self.host.open(message)
            if kind == "session.input":
                return self.host.input_forwarded(message["session"], int(message["sequence"]), message["input"])
            if kind == "session.refresh":
                return self.host.refresh(message["session"])
            if kind == "session.close":
                self.host.close(message["session"])
                self.language_thread.submit(self.narrator.forget, message["session"])
                return []
        except (KeyError, ValueError) as error:
            logger.exception("could not apply %s", kind)
            return [{"type": "session.error", "session": message.get("session"), "error": f"worker: {error}"}]
        if kind == "error":
            logger.error("platform reported: %s", message.get("error"))
        else:
            logger.warning("ignoring a %s message this worker does not handle", kind)
        return []

    def reopen_hosted(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The platform opens a session this worker already hosts (a browser arrived, or a restarted daphne
        or channel layer may have lost messages): say where its story stands and apply the logged inputs that
        never arrived; the host skips those it applied already."""
        session = message["session"]
        replies: list[dict[str, Any]] = [{"type": "session.opened", "session": session,
                                          "tick": self.host.sessions[session].tick}]  # fmt: skip
        replies += self.host.refresh(session)
        for pending in message.get("pending", []):
            replies += self.host.input(session, int(pending["sequence"]), pending["input"])
        return replies + self.host.early_inputs_apply(session)

    def close_all(self) -> None:
        for session in list(self.host.sessions):
            self.host.close(session)
            self.language_thread.submit(self.narrator.forget, session)

    # Narrative work, on the language thread, and the link it reaches the platform and the host by.

    def jobs_start(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.language_thread.submit(self.narrator.run, job, self)

    def send(self, message: dict[str, Any]) -> None:
        """Send from any thread; dropped when the connection is gone (the platform reassigns the session)."""
        connection, loop = self.connection, self.loop
        if connection is None or loop is None:
            return
        asyncio.run_coroutine_threadsafe(connection.send(protocol.encode(message)), loop)

    def recall(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Ask the platform for a character's memories and lore (from the language thread); None on no answer."""
        loop = self.loop
        if loop is None or self.connection is None:
            return None
        try:
            return asyncio.run_coroutine_threadsafe(self.recall_request(request), loop).result(
                self.config.recall_timeout_seconds + 1
            )
        except (TimeoutError, asyncio.CancelledError, websockets.ConnectionClosed):
            logger.warning("no memories arrived for session %s; replying without them", request.get("session"))
            return None

    async def recall_request(self, request: dict[str, Any]) -> dict[str, Any]:
        number = next(self.recall_numbers)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.recalls[number] = answer
        try:
            assert self.connection is not None
            await self.connection.send(protocol.encode({"type": "session.recall", "request": number, **request}))
            return await asyncio.wait_for(answer, self.config.recall_timeout_seconds)
        finally:
            self.recalls.pop(number, None)

    def recalled(self, message: dict[str, Any]) -> None:
        waiting = self.recalls.get(message.get("request"))  # type: ignore[arg-type]
        if waiting is not None and not waiting.done():
            waiting.set_result(message)

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None:
        self.engine_thread.submit(self.host.conversation_record, session, character, said, reply)

    async def on_engine_thread(self, function: Callable[..., Any], *arguments: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.engine_thread, function, *arguments)


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


def config_from_arguments(arguments: argparse.Namespace) -> WorkerConfig:
    return WorkerConfig(
        url=arguments.url, token=arguments.token, slots=arguments.slots, device=arguments.device,
        language_model=arguments.language_model,
    )  # fmt: skip


def run_until_interrupted(config: WorkerConfig) -> None:
    try:
        asyncio.run(InferenceWorker(config).run())
    except TokenRefused as error:
        raise SystemExit(f"inference worker: {error}") from None
    except KeyboardInterrupt:
        logger.info("stopped")


class BackgroundWorker:
    """An inference worker on a thread of its own, for running inside another process (`manage.py serve`)."""

    def __init__(self, config: WorkerConfig) -> None:
        self.worker = InferenceWorker(config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="inference-worker", daemon=True)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout_seconds: float = 5.0) -> None:
        if self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout_seconds)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self.worker.run())
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
