"""The world engine interface the inference worker calls, and the registry of engines.

An engine opens sessions from a world spec (and, when resuming, a snapshot), steps a *batch* of sessions at
once (one action and a list of structured events per session in, one encoded frame per session out), and
snapshots a session to bytes. The engine knows nothing about the platform, WebSockets or Django; the worker
process is the only bridge (the split nanochat keeps in `nanochat/engine.py`).
"""

from __future__ import annotations

import io
import uuid
from abc import ABC, abstractmethod
from collections.abc import Container
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, NamedTuple

import numpy as np
from PIL import Image

from inference.world.events import MAX_ACTION, WorldEvent, parse_event
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import WorldState, from_snapshot, initial_state, step, to_snapshot


class StepRequest(NamedTuple):
    """One session's input for one tick; a plain `(session, action, events)` tuple works the same."""

    session: str
    action: int
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class Frame:
    """One encoded frame of one session, numbered by the tick that produced it."""

    session: str
    number: int
    # The picture: JPEG bytes from an engine whose `facts.codec` is "jpeg"; a video engine ("h264", "vp8")
    # leaves them empty and hands `pixels` over, which the worker encodes once per session.
    jpeg: bytes = b""
    # Where the player stands after the tick, in cells: the host fires area hooks from it.
    position: tuple[float, float] = (0.0, 0.0)
    pixels: np.ndarray | None = None  # (H, W, 3) uint8, H and W as the engine's facts state


class Availability(NamedTuple):
    """Whether an engine can run in this process, and if not, why (a sentence for the operator)."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class EngineFacts:
    """What an engine needs and what it streams: the worker announces these with the engine's name."""

    device: str  # "cpu": runs anywhere; "cuda": needs a GPU
    width: int  # of the frames it sends, in pixels
    height: int
    frames_per_second: int  # the rate it is stepped at
    codec: str = "jpeg"  # how each frame is encoded
    weights: str = ""  # where its weights come from (a file or a folder the studio names); empty: it has none


class WorldEngine(ABC):
    """A world engine; one instance serves many sessions and is driven from a single thread.

    Engines are built with keyword options only, and every engine accepts `device` (a torch device name such
    as "cpu" or "cuda:1"), so the worker builds any of them the same way: `create_engine(name, device=...)`.
    An engine is found by the entry point it registers in the group `worldloom.engines` (see pyproject.toml).
    """

    name: ClassVar[str]
    facts: ClassVar[EngineFacts]

    @classmethod
    def available(cls) -> Availability:
        """Whether this process can build the engine with its defaults, and why not (missing weights, no GPU)."""
        return Availability(True)

    @abstractmethod
    def open_session(self, spec: dict[str, Any], snapshot: bytes | None = None, *, session: str | None = None) -> str:
        """Open a session from a world spec, resuming from `snapshot` when given; returns its id, which is
        `session` when given (the worker passes the platform's, so frames need no other name)."""

    @abstractmethod
    def step(self, batch: list[StepRequest]) -> list[Frame]:
        """Advance every session in `batch` by one tick; frames come back in the order of `batch`."""

    @abstractmethod
    def snapshot(self, session: str) -> bytes:
        """The session's state as bytes that `open_session` accepts back."""

    @abstractmethod
    def close(self, session: str) -> None:
        """Forget a session and free what it holds."""


@dataclass(frozen=True)
class RaycastEngineConfig:
    """Defaults of the raycaster engine."""

    # 256x256 is what the player canvas shows without visible blur, and small enough that one core renders and
    # encodes several sessions at 20 fps. The neural engine renders 64x64 and the canvas upscales it.
    width: int = 256
    height: int = 256
    jpeg_quality: int = 80  # blocking artefacts are hard to see above 75; size grows fast beyond 85


CONFIG = RaycastEngineConfig()


class StepError(ValueError):
    """A batch named an unknown session or carried an invalid event; no session in the batch was stepped."""

    def __init__(self, session: str, message: str) -> None:
        super().__init__(f"session {session}: {message}")
        self.session = session


def parse_batch(batch: list[StepRequest], sessions: Container[str]) -> list[tuple[str, int, list[WorldEvent]]]:
    """Check a whole batch before any session steps, so that a bad request leaves every session as it was."""
    parsed = []
    seen = set()
    for session, action, events in batch:
        if session not in sessions:
            raise StepError(session, "no such session")
        if session in seen:
            raise StepError(session, "appears twice in one batch")
        seen.add(session)
        if not isinstance(action, int) or not 0 <= action <= MAX_ACTION:
            raise StepError(session, f"action must be a bitmask 0..{MAX_ACTION}, got {action}")
        try:
            parsed.append((session, action, [parse_event(event) for event in events]))
        except ValueError as error:
            raise StepError(session, str(error)) from error
    return parsed


def world_and_state(spec: dict[str, Any], snapshot: bytes | None) -> tuple[WorldSpec, WorldState]:
    """The validated spec and the state a session opens on: fresh from the spec, or restored from a snapshot."""
    world = WorldSpec.from_dict(spec)
    if snapshot is None:
        return world, initial_state(world)
    state = from_snapshot(snapshot)
    if (state.seed, state.size) != (world.seed, world.size):
        raise ValueError("the snapshot belongs to a world with another seed or size than this spec")
    return world, state


def encode_jpeg(image: np.ndarray, quality: int, *, full_colour: bool = False) -> bytes:
    """JPEG bytes of a uint8 (H, W, 3) image; colour at half resolution (4:2:0) unless `full_colour`."""
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="JPEG", quality=quality, subsampling=0 if full_colour else 2)
    return buffer.getvalue()


def preview_jpeg(spec: dict[str, Any], width: int = 256, height: int = 256, quality: int = 85) -> bytes:
    """The first view of a world as JPEG bytes, for studio previews and gallery thumbnails."""
    world = WorldSpec.from_dict(spec)
    return encode_jpeg(render(initial_state(world), world, width, height), quality)


@dataclass
class _RaycastSession:
    spec: WorldSpec
    state: WorldState


class RaycastEngine(WorldEngine):
    """The procedural raycaster served as an engine of its own: exact, fast, and not a neural model.

    A batch is stepped session by session: a frame costs a few milliseconds of numpy, and sessions share no
    work worth batching, unlike the neural model's matrix multiplications.
    """

    name = "raycaster"
    facts = EngineFacts(device="cpu", width=CONFIG.width, height=CONFIG.height, frames_per_second=20)

    def __init__(
        self,
        width: int | None = None,  # None: the width its facts state, as for height
        height: int | None = None,
        jpeg_quality: int = CONFIG.jpeg_quality,
        device: str = "cpu",  # every engine takes the worker's device; numpy always runs on the CPU
    ) -> None:
        if not 1 <= jpeg_quality <= 95:
            raise ValueError(f"jpeg_quality must be 1..95, got {jpeg_quality}")
        self.width = self.facts.width if width is None else width
        self.height = self.facts.height if height is None else height
        self.jpeg_quality = jpeg_quality
        self._sessions: dict[str, _RaycastSession] = {}

    def open_session(self, spec: dict[str, Any], snapshot: bytes | None = None, *, session: str | None = None) -> str:
        world, state = world_and_state(spec, snapshot)
        session = session or uuid.uuid4().hex
        self._sessions[session] = _RaycastSession(world, state)
        return session

    def step(self, batch: list[StepRequest]) -> list[Frame]:
        parsed = parse_batch(batch, self._sessions)
        frames = []
        for session, action, world_events in parsed:
            held = self._sessions[session]
            held.state = step(held.state, action, world_events)
            image = render(held.state, held.spec, self.width, self.height)  # (H, W, 3) uint8
            position = held.state.pose.cell_position
            if self.facts.codec == "jpeg":
                frames.append(Frame(session, held.state.tick, encode_jpeg(image, self.jpeg_quality), position))
            else:  # the worker encodes the video
                frames.append(Frame(session, held.state.tick, position=position, pixels=image))
        return frames

    def snapshot(self, session: str) -> bytes:
        return to_snapshot(self._sessions[session].state)

    def close(self, session: str) -> None:
        self._sessions.pop(session, None)


class RaycastVideoEngine(RaycastEngine):
    """The raycaster at 640x352 streamed as H.264: video anyone can play and test without a GPU.

    640x352 is the picture size of the video world models (Matrix-Game 2.0), so the stream, the encoder and the
    page's decoder are exercised as they will be for those, on one core.
    """

    name = "raycaster-video"
    facts = EngineFacts(device="cpu", width=640, height=352, frames_per_second=20, codec="h264")


ENGINE_GROUP = "worldloom.engines"


def _registered() -> dict[str, EntryPoint]:
    """Every engine installed in this environment, by name: ours and any package's, through the entry-point group
    `worldloom.engines` (a studio `pip install`s its engine on its workers; nothing here names it)."""
    return {entry.name: entry for entry in entry_points(group=ENGINE_GROUP)}


def engine_class_or_reason(name: str) -> type[WorldEngine] | str:
    """The engine class registered as `name`, or why it cannot be had (not installed; its import failed)."""
    entry = _registered().get(name)
    return _loaded(entry) if entry is not None else f"no engine {name!r} is installed"


def _loaded(entry: EntryPoint) -> type[WorldEngine] | str:
    """The engine class an entry point names, or why it cannot be had.

    Loading imports the engine's module only now: the platform and the worker import torch, or a studio's
    model library, only for an engine that is asked for."""
    try:
        loaded = entry.load()
    except Exception as error:  # a plugin's import can fail in any way; it must not take the others down
        return f"engine {entry.name!r} could not be imported: {error}"
    if not (isinstance(loaded, type) and issubclass(loaded, WorldEngine)):
        return f"engine {entry.name!r} ({entry.value}) is not a WorldEngine"
    return loaded


def available_engines() -> dict[str, type[WorldEngine]]:
    """Engines this process can serve with their defaults, by name.

    An engine that cannot be imported, or whose weights or device are missing, is left out: the worker
    announces only what it can run.
    """
    engines = {}
    for name, entry in sorted(_registered().items()):
        engine_class = _loaded(entry)
        if isinstance(engine_class, type) and engine_class.available():
            engines[name] = engine_class
    return engines


def create_engine(name: str, **options: Any) -> WorldEngine:
    """Build the engine called `name` with its keyword options (a model engine may be given its checkpoint)."""
    engine_class = engine_class_or_reason(name)
    if not isinstance(engine_class, type):
        raise ValueError(f"unknown engine {name!r}; available: {', '.join(sorted(available_engines()))}")
    return engine_class(**options)
