"""The neural world engine: Worldloom's own state-anchored causal world model served through `WorldEngine`.

Each session owns its simulator state (`inference.world.state`), which is where persistence lives: the map,
the pose, the events and the objects never depend on what the model remembers. Every tick the engine steps
the state, computes its conditioning (the geometric sketch, held keys, events, stars and particles), and
runs the model for *all* sessions of the batch in one forward pass: the dynamics transformer predicts each
session's next latent from its rolling KV cache (GameNGen and Oasis generate frame by frame the same way;
the cache is nanoGPT's, per session, padded and masked when sessions of different ages share a batch), and
the autoencoder decodes it against the state's planes. Frames are 64x64 and JPEG encoded as they are; the
player's canvas scales them up.

Snapshots hold the simulator state only, the same bytes the raycaster engine writes, so a session saved
under one engine resumes under the other. The model's context (its KV cache) is not in them, which keeps
them small: a restored session restarts its context from the state, by encoding the raycaster's frame of the
restored pose, exactly as a new session starts. Its frames are a pure function of the snapshot and the
inputs that follow, but they are not bit-equal to those the uninterrupted session would have shown.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from inference.engine import (
    Availability,
    EngineFacts,
    Frame,
    StepRequest,
    WorldEngine,
    encode_jpeg,
    parse_batch,
    world_and_state,
)
from inference.world.conditioning import conditioning
from inference.world.model import DEFAULT_CHECKPOINT, KeyValueCache, WorldModel, load_world_model
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import WorldState, step, to_snapshot


@dataclass(frozen=True)
class WorldModelEngineConfig:
    """Defaults of the neural engine."""

    checkpoint: Path = DEFAULT_CHECKPOINT  # the committed model, trained by `python -m inference.world.train`
    # Frames go out at the model's own 64x64, and the player's canvas scales them up (smoothly, as a browser
    # draws an image onto a larger canvas): upscaling here would add to every frame's time and bytes for
    # nothing the canvas cannot do. Another size is upscaled bilinearly (nearest shows the pixel grid at 4x,
    # bicubic rings around the thin seams).
    width: int = 64
    height: int = 64
    # Enlarged 4x, a small JPEG shows its blocks and its halved colour resolution: at 95 with full colour it
    # stays as faithful as the raycaster's 256x256 at 80.
    jpeg_quality: int = 95
    # One inference thread per worker process: oversubscribed threads are several times slower, and batching
    # the sessions, not threads, is what fills a core.
    threads: int = 1


CONFIG = WorldModelEngineConfig()


@dataclass
class _ModelSession:
    spec: WorldSpec
    state: WorldState
    latent: torch.Tensor  # (1, C, g, g): the latent of the frame the player sees now
    cache: KeyValueCache  # this session's keys and values, batch of one
    image: np.ndarray | None = None  # (H, W, 3) uint8: the last 64x64 frame, before upscaling


class WorldModelEngine(WorldEngine):
    """The neural world model as an engine: one batched forward pass per tick for every session in the batch."""

    name = "worldmodel"

    def __init__(
        self,
        checkpoint: Path | str = CONFIG.checkpoint,
        width: int = CONFIG.width,
        height: int = CONFIG.height,
        jpeg_quality: int = CONFIG.jpeg_quality,
        threads: int = CONFIG.threads,
        device: str = "cpu",
        model: WorldModel | None = None,  # an already built model (tests); otherwise loaded from `checkpoint`
    ) -> None:
        if not 1 <= jpeg_quality <= 95:
            raise ValueError(f"jpeg_quality must be 1..95, got {jpeg_quality}")
        if device == "cpu":
            torch.set_num_threads(threads)
        self.device = torch.device(device)
        self.model = (model or load_world_model(Path(checkpoint), device=device)).to(self.device).eval()
        self.width, self.height, self.jpeg_quality = width, height, jpeg_quality
        self._sessions: dict[str, _ModelSession] = {}

    facts = EngineFacts(
        device="cpu", width=CONFIG.width, height=CONFIG.height, frames_per_second=20, weights=str(CONFIG.checkpoint)
    )

    @classmethod
    def available(cls) -> Availability:
        if not CONFIG.checkpoint.exists():
            return Availability(
                False, f"its checkpoint {CONFIG.checkpoint} is missing (python -m inference.world.train)"
            )
        return Availability(True)

    @torch.inference_mode()
    def open_session(self, spec: dict[str, Any], snapshot: bytes | None = None, *, session: str | None = None) -> str:
        world, state = world_and_state(spec, snapshot)
        session = session or uuid.uuid4().hex
        self._sessions[session] = _ModelSession(world, state, self._anchor_latent(world, state), self._new_cache())
        return session

    @torch.inference_mode()
    def step(self, batch: list[StepRequest]) -> list[Frame]:
        parsed = parse_batch(batch, self._sessions)  # a bad request leaves every session as it was
        if not parsed:
            return []
        held = [self._sessions[session] for session, _, _ in parsed]
        for session, (_, action, world_events) in zip(held, parsed, strict=True):
            session.state = step(session.state, action, world_events)
        columns, scalars, events, overlay = self._conditioning(
            [(session.spec, session.state, action) for session, (_, action, _) in zip(held, parsed, strict=True)]
        )
        previous = torch.cat([session.latent for session in held])  # (B, C, g, g)
        cache = KeyValueCache.stack([session.cache for session in held])
        latents = self.model.dynamics.step(previous, columns, scalars, events, cache)  # (B, C, g, g)
        planes = self.model.planes(columns, scalars, events, overlay)  # (B, PLANES, H, W)
        images = self._to_uint8(self.model.autoencoder.decode(latents, planes))  # (B, H, W, 3)
        frames = []
        for index, (session, session_cache) in enumerate(zip(held, cache.split(), strict=True)):
            session.latent, session.cache, session.image = (
                latents[index : index + 1].clone(),
                session_cache,
                images[index],
            )
            jpeg = encode_jpeg(self._upscale(images[index]), self.jpeg_quality, full_colour=True)
            frames.append(Frame(parsed[index][0], session.state.tick, jpeg, session.state.pose.cell_position))
        return frames

    def snapshot(self, session: str) -> bytes:
        return to_snapshot(self._sessions[session].state)

    def close(self, session: str) -> None:
        self._sessions.pop(session, None)

    def frame(self, session: str) -> np.ndarray | None:
        """The session's last frame at the model's size, uint8 (H, W, 3), before upscaling; None before a step."""
        return self._sessions[session].image

    def _new_cache(self) -> KeyValueCache:
        return self.model.dynamics.new_cache()

    def _conditioning(self, items: list[tuple[WorldSpec, WorldState, int]]) -> tuple[torch.Tensor, ...]:
        """Columns (B, W, F), scalars (B, S), events (B, 3) and overlay (B, H, W) of each (spec, state, action)."""
        size = self.model.config.frame_size
        conditions = [conditioning(state, spec, action, size) for spec, state, action in items]
        return tuple(
            torch.from_numpy(np.stack([getattr(condition, name) for condition in conditions])).to(self.device)
            for name in ("columns", "scalars", "events", "overlay")
        )

    def _anchor_latent(self, spec: WorldSpec, state: WorldState) -> torch.Tensor:
        """(1, C, g, g): the latent of the raycaster's frame of `state`, where a session's context starts."""
        size = self.model.config.frame_size
        frame = torch.from_numpy(render(state, spec, size, size)).to(self.device)  # (H, W, 3) uint8
        frame = frame.permute(2, 0, 1)[None].float() / 255  # (1, 3, H, W)
        columns, scalars, events, overlay = self._conditioning([(spec, state, 0)])
        return self.model.autoencoder.encode(frame, self.model.planes(columns, scalars, events, overlay))

    @staticmethod
    def _to_uint8(images: torch.Tensor) -> np.ndarray:
        """(B, 3, H, W) floats about 0..1 -> (B, H, W, 3) uint8 on the host."""
        return (images.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()

    def _upscale(self, image: np.ndarray) -> np.ndarray:
        if image.shape[:2] == (self.height, self.width):
            return image
        return np.asarray(Image.fromarray(image).resize((self.width, self.height), Image.Resampling.BILINEAR))
