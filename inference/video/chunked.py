"""A base for engines around video world models that draw a chunk of frames per action.

Interactive video models such as Matrix-Game 2.0 (Skywork, "Matrix-Game 2.0: An Open-Source, Real-Time, and
Streaming Interactive World Model", 2025) and Oasis generate autoregressively from a seed image: each call takes
the keys and camera motion of the next few frames and returns those frames. The host, though, steps every
session once per tick and wants one frame back. This base sits between the two:

- each session keeps a bounded queue of the frames of its current chunk, and a tick hands out one of them, so
  the host receives one frame per tick at the engine's rate (`facts.frames_per_second`);
- the actions a player holds while a chunk plays are latched (their keys or'ed together, so that a tap shorter
  than a chunk still counts), and the latch becomes the controls of the next chunk, mapped onto the model's
  keyboard and mouse by the adapter's `ControlMapping`;
- every session whose queue ran out in the same tick is generated in one call, in groups of `max_batch`;
- a session starts from a seed image: the world's reference image when the spec carries one (base64 image
  bytes under `reference_image`), else our raycaster's first view of the world at the model's resolution;
- the pose is estimated by stepping our simulator (`inference.world.state`) with the action each frame was made
  under, so positions, and the platform's area hooks on them, follow what the model was asked to show; world
  events apply to that state, and a model that reads text gets a prompt describing it;
- a snapshot holds the seed image and the last frame shown (as JPEG), the latch and the simulator state (pose,
  tick). The model's own context (a KV cache) is not saved: a restored session restarts it from its last frame.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import uuid
import zlib
from abc import abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from inference.engine import Frame, StepRequest, WorldEngine, encode_jpeg, parse_batch, world_and_state
from inference.world.events import MAX_ACTION
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import SNAPSHOT_MAGIC as WORLD_SNAPSHOT_MAGIC
from inference.world.state import WorldState, step, to_snapshot


@dataclass(frozen=True)
class ChunkedConfig:
    """Limits of chunked video engines."""

    # A reference image larger than a 50-megapixel photograph is refused before decoding: a decompression bomb
    # guard, the same limit the palette reader keeps.
    max_reference_pixels: int = 50_000_000
    # Matrix-Game 2.0 draws 12 frames per action and Oasis 1..16; a chunk beyond this is an adapter's mistake,
    # and the queue that holds it must stay bounded.
    max_chunk_frames: int = 64
    # The seed and the last frame travel in every snapshot, over WebSockets whose messages daphne caps at 1 MiB: a
    # generated 640x352 frame is several hundred KB as PNG and about a fifth of that as JPEG at 92 with full colour,
    # which is as faithful as the model needs to restart from it.
    snapshot_jpeg_quality: int = 92


CONFIG = ChunkedConfig()
SNAPSHOT_MAGIC = b"WLCV"
SNAPSHOT_VERSION = 1
# The spec key a caller may add for the seed image: base64 of PNG or JPEG bytes. It is not part of `WorldSpec`
# (the simulator has no use for it), so it is taken off before the spec is validated.
REFERENCE_IMAGE_KEY = "reference_image"


class Controls(NamedTuple):
    """One chunk's controls in the model's own terms."""

    keyboard: np.ndarray  # (K,) float32, 1 for each of the model's keys that is held
    mouse: np.ndarray  # (M,) float32, the camera motion per frame (M is 0 for a model without a mouse)


@dataclass(frozen=True)
class ControlMapping:
    """How our action bits become a model's controls; each adapter declares its own."""

    # For each of the model's keyboard slots, in the model's order, the action bits that press it.
    keyboard: tuple[int, ...]
    # For each action bit that moves the camera, the mouse motion per frame it adds; empty for a model that turns
    # with keys (put the turn bits in `keyboard` then).
    mouse: tuple[tuple[int, tuple[float, ...]], ...] = ()
    mouse_size: int = 0

    def __post_init__(self) -> None:
        if any(len(motion) != self.mouse_size for _, motion in self.mouse):
            raise ValueError(f"every mouse motion must have {self.mouse_size} values")

    def controls(self, action: int) -> Controls:
        """The controls for the held `action` bits."""
        keyboard = np.array([1.0 if action & bits else 0.0 for bits in self.keyboard], dtype=np.float32)
        mouse = np.zeros(self.mouse_size, dtype=np.float32)
        for bits, motion in self.mouse:
            if action & bits:
                mouse += np.asarray(motion, dtype=np.float32)
        return Controls(keyboard, mouse)


def scene_prompt(state: WorldState) -> str:
    """A sentence describing the scene the state holds, for models that take text: world events (night, snow,
    fog) change the state and so the prompt."""
    light = {"day": "in daylight", "dawn": "at dawn", "night": "at night, under the stars"}[state.time_of_day]
    weather = {"clear": "", "snow": ", in falling snow", "rain": ", in the rain"}[state.weather]
    fog = ", in thick fog" if state.fog else ""
    return f"A first-person walk through a maze of stone rooms and corridors {light}{weather}{fog}."


@dataclass
class _ChunkedSession:
    spec: WorldSpec
    state: WorldState
    seed: np.ndarray  # (H, W, 3) uint8: the image the model started from
    last_frame: np.ndarray  # (H, W, 3) uint8: what the player sees now (the seed before the first frame)
    context: Any  # the adapter's per-session model state
    latched: int = 0  # the action bits held since the current chunk began
    queue: deque[tuple[np.ndarray, int]] = field(default_factory=deque)  # frames to show, with their action


class ChunkedVideoEngine(WorldEngine):
    """A video model that draws `chunk_frames` frames per action, served one frame per tick.

    An adapter declares `controls` and `chunk_frames`, sets `max_batch`, and implements `start` (a session's
    model context from a seed image) and `generate` (one chunk for each of several sessions).
    """

    controls: ClassVar[ControlMapping]
    chunk_frames: ClassVar[int]
    takes_prompt: ClassVar[bool] = False  # whether `generate` reads its prompts

    def __init__(self, *, max_batch: int = 1) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if not 1 <= self.chunk_frames <= CONFIG.max_chunk_frames:
            raise ValueError(f"chunk_frames must be 1..{CONFIG.max_chunk_frames}, got {self.chunk_frames}")
        self.max_batch = max_batch
        self._sessions: dict[str, _ChunkedSession] = {}

    @abstractmethod
    def start(self, seed: np.ndarray, prompt: str) -> Any:
        """A session's model context, started from `seed` ((H, W, 3) uint8 at the facts' size)."""

    @abstractmethod
    def generate(self, contexts: list[Any], controls: list[Controls], prompts: list[str]) -> list[np.ndarray]:
        """The next chunk of each session, (N, H, W, 3) uint8 with N 1..chunk_frames, made under its controls; at most
        `max_batch` sessions at once. Contexts are updated in place."""

    def release(self, context: Any) -> None:
        """Free what a session's context holds when the session closes."""

    def open_session(self, spec: dict[str, Any], snapshot: bytes | None = None, *, session: str | None = None) -> str:
        spec = dict(spec)
        reference = spec.pop(REFERENCE_IMAGE_KEY, None)
        if snapshot is not None and snapshot.startswith(SNAPSHOT_MAGIC):
            world, state, seed, last_frame, latched = self._restored(spec, snapshot)
        else:
            # A plain world state snapshot (from the raycaster or the neural engine) resumes here too.
            world, state = world_and_state(spec, snapshot)
            seed = self._reference_seed(reference) if reference is not None else self._rendered_seed(world, state)
            last_frame, latched = seed, 0
        session = session or uuid.uuid4().hex
        context = self.start(last_frame, scene_prompt(state))
        self._sessions[session] = _ChunkedSession(world, state, seed, last_frame, context, latched)
        return session

    def step(self, batch: list[StepRequest]) -> list[Frame]:
        parsed = parse_batch(batch, self._sessions)  # a bad request leaves every session as it was
        held = [self._sessions[session] for session, _, _ in parsed]
        for session, (_, action, _) in zip(held, parsed, strict=True):
            session.latched |= action
        starving = [session for session in held if not session.queue]
        for start in range(0, len(starving), self.max_batch):
            self._refill(starving[start : start + self.max_batch])
        frames = []
        for session, (name, _, world_events) in zip(held, parsed, strict=True):
            pixels, action = session.queue.popleft()
            session.state = step(session.state, action, world_events)
            session.last_frame = pixels
            frames.append(Frame(name, session.state.tick, position=session.state.pose.cell_position, pixels=pixels))
        return frames

    def snapshot(self, session: str) -> bytes:
        held = self._sessions[session]
        document = {
            "state": base64.b64encode(to_snapshot(held.state)).decode("ascii"),
            "seed": base64.b64encode(_jpeg(held.seed)).decode("ascii"),
            "last_frame": base64.b64encode(_jpeg(held.last_frame)).decode("ascii"),
            "latched": held.latched,
        }
        payload = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
        return SNAPSHOT_MAGIC + bytes([SNAPSHOT_VERSION]) + zlib.compress(payload)

    def queued(self, session: str) -> int:
        """How many frames of the session's current chunk are still to be shown (0: the next tick draws a chunk)."""
        return len(self._sessions[session].queue)

    def close(self, session: str) -> None:
        held = self._sessions.pop(session, None)
        if held is not None:
            self.release(held.context)

    def _refill(self, sessions: list[_ChunkedSession]) -> None:
        """Generate the next chunk of each session from its latch, and start a new latch."""
        actions = [session.latched for session in sessions]
        chunks = self.generate(
            [session.context for session in sessions],
            [self.controls.controls(action) for action in actions],
            [scene_prompt(session.state) for session in sessions] if self.takes_prompt else ["" for _ in sessions],
        )
        if len(chunks) != len(sessions):
            raise RuntimeError(f"{self.name}: generate returned {len(chunks)} chunks for {len(sessions)} sessions")
        frame_shape = (self.facts.height, self.facts.width, 3)
        for session, action, chunk in zip(sessions, actions, chunks, strict=True):
            if chunk.dtype != np.uint8 or chunk.shape[1:] != frame_shape or not 1 <= len(chunk) <= self.chunk_frames:
                raise RuntimeError(
                    f"{self.name}: a chunk must be 1..{self.chunk_frames} uint8 frames of {frame_shape}, "
                    f"got {chunk.dtype} {chunk.shape}"
                )
            session.queue = deque(((frame, action) for frame in chunk), maxlen=self.chunk_frames)
            session.latched = 0

    def _rendered_seed(self, world: WorldSpec, state: WorldState) -> np.ndarray:
        """Our raycaster's view of `state` at the model's resolution."""
        return render(state, world, self.facts.width, self.facts.height)

    def _reference_seed(self, encoded: Any) -> np.ndarray:
        """The reference image (base64 image bytes), cropped to the model's aspect and resized to its size."""
        if not isinstance(encoded, str):
            raise ValueError(f"{REFERENCE_IMAGE_KEY} must be base64 image bytes, got {type(encoded).__name__}")
        try:
            image = Image.open(io.BytesIO(base64.b64decode(encoded, validate=True)))
        except (binascii.Error, UnidentifiedImageError) as error:
            raise ValueError(f"{REFERENCE_IMAGE_KEY} is not a base64 PNG or JPEG image") from error
        if image.width * image.height > CONFIG.max_reference_pixels:
            raise ValueError(f"{REFERENCE_IMAGE_KEY} has more than {CONFIG.max_reference_pixels} pixels")
        fitted = ImageOps.fit(image.convert("RGB"), (self.facts.width, self.facts.height), Image.Resampling.LANCZOS)
        return np.asarray(fitted, dtype=np.uint8)

    def _restored(
        self, spec: dict[str, Any], snapshot: bytes
    ) -> tuple[WorldSpec, WorldState, np.ndarray, np.ndarray, int]:
        """The spec, state, seed image, last frame and latch a chunked snapshot holds."""
        if snapshot[len(SNAPSHOT_MAGIC)] != SNAPSHOT_VERSION:
            raise ValueError(f"chunked video snapshot version {snapshot[len(SNAPSHOT_MAGIC)]} is not supported")
        try:
            document = json.loads(zlib.decompress(snapshot[len(SNAPSHOT_MAGIC) + 1 :]))
            state_bytes = base64.b64decode(document["state"])
            seed, last_frame = (_decoded(base64.b64decode(document[key])) for key in ("seed", "last_frame"))
            latched = document["latched"]
        except (zlib.error, json.JSONDecodeError, KeyError, TypeError, binascii.Error, UnidentifiedImageError) as error:
            raise ValueError("not a chunked video snapshot this code reads") from error
        if not state_bytes.startswith(WORLD_SNAPSHOT_MAGIC) or not isinstance(latched, int):
            raise ValueError("not a chunked video snapshot this code reads")
        world, state = world_and_state(spec, state_bytes)
        size = (self.facts.height, self.facts.width, 3)
        if seed.shape != size or last_frame.shape != size:
            raise ValueError(f"the snapshot's images are not {self.facts.width}x{self.facts.height}")
        return world, state, seed, last_frame, latched & MAX_ACTION


def _jpeg(image: np.ndarray) -> bytes:
    return encode_jpeg(image, CONFIG.snapshot_jpeg_quality, full_colour=True)


def _decoded(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.uint8)
