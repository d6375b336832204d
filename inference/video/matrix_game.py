"""Matrix-Game 2.0 as a Worldloom engine: Skywork's open-weight, action-conditioned streaming world model (Skywork,
"Matrix-Game 2.0: An Open-Source, Real-Time, and Streaming Interactive World Model", 2025; MIT licence), run
through fastvideo 0.2.1's `StreamingVideoGenerator`.

The model is a causal Wan 2.1 image-to-video DiT distilled to a few denoising steps, with an action module in
its blocks: it starts from a seed image and, for each `step(keyboard, mouse)`, denoises a block of 3 latent
frames that its VAE decodes to frames of 640x352, 12 per step in fastvideo's example (the base takes a shorter
chunk as it comes, in case the causal VAE's first block gives fewer). The "universal" checkpoint takes four keys
(W, S, A, D) and a camera motion per frame (pitch, yaw); fastvideo's demo sends a yaw of 0.1 per frame for a
turn, which is what the arrow keys map to here.

A generator holds one stream: `reset` starts it from an image, and it lasts `stream_frames` frames, after which
this engine restarts it from the last frame shown. A generator holds its own copy of the weights, so the
engine builds `streams` of them and gives each session one; sessions are not batched (`max_batch` 1).

Weights come only from a local folder the studio names (the diffusers-layout checkpoint
FastVideo/Matrix-Game-2.0-Base-Distilled-Diffusers: model_index.json, transformer/, vae/, scheduler/,
image_encoder/, image_processor/), with the Hugging Face hub kept offline; no remote code is run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from PIL import Image

from inference.engine import Availability, EngineFacts
from inference.video.chunked import ChunkedVideoEngine, ControlMapping, Controls
from inference.world.state import Action


@dataclass(frozen=True)
class MatrixGameConfig:
    """Defaults of the Matrix-Game 2.0 engine."""

    # What fastvideo's streaming example asks for: 80x44 latents at the VAE's 8x.
    width: int = 640
    height: int = 352
    # fastvideo writes a stream's video at 24 fps: the rate its frames are meant to be watched at.
    frames_per_second: int = 24
    # One step denoises 3 latent frames, which the VAE decodes to 4 frames each.
    chunk_frames: int = 12
    # The example's stream length: (597 - 1) / 4 + 1 = 150 latent frames, 50 steps of 3; past them the pipeline's
    # streaming_step draws nothing new, so a spent stream is restarted from its last frame.
    stream_frames: int = 597
    steps_per_stream: int = 50
    # The example's setting (the distilled pipeline's config also names its DMD timesteps 1000, 666, 333).
    num_inference_steps: int = 50
    # fastvideo's CAM_VALUE: the yaw per frame its demo sends while a turn key is held.
    camera_speed: float = 0.1
    # One generator per session: each holds its own copy of the weights (DiT, VAE, image encoder), in its own
    # fastvideo worker process.
    streams: int = 1
    weights_variable: str = "WORLDLOOM_MATRIX_GAME_WEIGHTS"
    # The parts fastvideo's Matrix-Game 2.0 pipeline loads (its `_required_config_modules`), with the index.
    weights_parts: tuple[str, ...] = field(
        default=("model_index.json", "transformer", "vae", "scheduler", "image_encoder", "image_processor")
    )


CONFIG = MatrixGameConfig()


class StreamingGenerator(Protocol):
    """What this engine calls on fastvideo's `StreamingVideoGenerator`."""

    def reset(self, prompt: str = ..., image_path: str | None = ..., num_frames: int = ..., **kwargs: Any) -> None: ...

    def step(self, keyboard_cond: torch.Tensor, mouse_cond: torch.Tensor) -> tuple[list[np.ndarray], Any]: ...


@dataclass
class _Stream:
    generator: int  # index into the engine's generators
    last_frame: np.ndarray  # (H, W, 3) uint8: where the stream restarts when it is spent
    steps: int = 0


def weights_problem(folder: str | Path | None) -> str:
    """Why `folder` cannot serve as the weights, as a sentence for the operator; empty when it can."""
    if not folder:
        return f"no weights folder is named (set {CONFIG.weights_variable} or pass weights=)"
    path = Path(folder)
    if not path.is_dir():
        return f"its weights folder {path} does not exist"
    missing = [part for part in CONFIG.weights_parts if not (path / part).exists()]
    if missing:
        return f"its weights folder {path} lacks {', '.join(missing)}"
    if not any((path / "transformer").glob("*.safetensors")):
        return f"its weights folder {path} has no transformer/*.safetensors"
    return ""


def fastvideo_problem() -> str:
    """Why fastvideo's streaming generator cannot be imported here; empty when it can."""
    try:
        # fastvideo lives only in the GPU worker's venv (it pins its own torch), so it is imported by name here.
        importlib.import_module("fastvideo.entrypoints.streaming_generator")
    except Exception as error:  # its import chain reaches CUDA libraries, torchvision and more: any may fail
        return f"fastvideo cannot be imported ({type(error).__name__}: {error})"
    return ""


class MatrixGame2Engine(ChunkedVideoEngine):
    """Matrix-Game 2.0 (universal, distilled) through fastvideo: 12 frames per action, one stream per session."""

    name = "matrix-game-2"
    facts = EngineFacts(
        device="cuda",
        width=CONFIG.width,
        height=CONFIG.height,
        frames_per_second=CONFIG.frames_per_second,
        codec="h264",
        weights=os.environ.get(CONFIG.weights_variable, f"${CONFIG.weights_variable}"),
    )
    # The universal checkpoint's keys are W, S, A, D in that order (fastvideo's KEYBOARD_MAP_4); the mouse is
    # (pitch, yaw), and a turn left is a negative yaw (its CAMERA_MAP "j").
    controls = ControlMapping(
        keyboard=(Action.FORWARD, Action.BACK, Action.STRAFE_LEFT, Action.STRAFE_RIGHT),
        mouse=((Action.TURN_LEFT, (0.0, -CONFIG.camera_speed)), (Action.TURN_RIGHT, (0.0, CONFIG.camera_speed))),
        mouse_size=2,
    )
    chunk_frames = CONFIG.chunk_frames

    @classmethod
    def available(cls) -> Availability:
        # The cheap checks first: the platform's processes ask on every studio page, and have no fastvideo.
        if importlib.util.find_spec("fastvideo") is None:
            problem = "fastvideo is not installed (the GPU worker's venv: see the README)"
        elif not torch.cuda.is_available():
            problem = "it needs a CUDA GPU and torch sees none"
        else:
            problem = weights_problem(os.environ.get(CONFIG.weights_variable)) or fastvideo_problem()
        return Availability(not problem, problem)

    def __init__(
        self,
        weights: str | Path | None = None,  # the weights folder; default: $WORLDLOOM_MATRIX_GAME_WEIGHTS
        streams: int = CONFIG.streams,
        device: str = "cuda",
        generators: list[StreamingGenerator] | None = None,  # already built generators; otherwise loaded
    ) -> None:
        super().__init__(max_batch=1)
        if generators is None:
            if not device.startswith("cuda"):
                raise ValueError(
                    f"Matrix-Game 2.0 runs on a CUDA GPU; start the worker with --device cuda, not {device}"
                )
            generators = self._loaded(weights or os.environ.get(CONFIG.weights_variable), streams)
        if not generators:
            raise ValueError("the engine needs at least one stream")
        self._generators = generators
        self._free = list(range(len(generators)))

    @staticmethod
    def _loaded(weights: str | Path | None, streams: int) -> list[StreamingGenerator]:
        problem = fastvideo_problem() or weights_problem(weights)
        if problem:
            raise RuntimeError(f"Matrix-Game 2.0 cannot start: {problem}")
        os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder only: nothing is fetched from the hub
        module = importlib.import_module("fastvideo.entrypoints.streaming_generator")
        return [
            module.StreamingVideoGenerator.from_pretrained(
                str(weights),
                num_gpus=1,
                use_fsdp_inference=False,
                dit_cpu_offload=False,
                vae_cpu_offload=False,
                text_encoder_cpu_offload=True,
                pin_cpu_memory=True,
            )
            for _ in range(streams)
        ]

    def start(self, seed: np.ndarray, prompt: str) -> _Stream:
        if not self._free:
            raise RuntimeError(
                f"all {len(self._generators)} Matrix-Game streams are in use; give the worker fewer slots"
            )
        stream = _Stream(self._free.pop(0), seed)
        self._reset(stream)
        return stream

    @torch.inference_mode()
    def generate(self, contexts: list[Any], controls: list[Controls], prompts: list[str]) -> list[np.ndarray]:
        chunks = []
        for stream, control in zip(contexts, controls, strict=True):
            if stream.steps >= CONFIG.steps_per_stream:
                self._reset(stream)
            keyboard, mouse = frame_conditions(control, CONFIG.chunk_frames)
            frames, _ = self._generators[stream.generator].step(keyboard, mouse)
            if not frames:
                raise RuntimeError("Matrix-Game returned no frames for a step")
            chunk = np.stack([self._sized(frame) for frame in frames])
            stream.steps += 1
            stream.last_frame = chunk[-1]
            chunks.append(chunk)
        return chunks

    def release(self, context: Any) -> None:
        self._free.append(context.generator)

    def _reset(self, stream: _Stream) -> None:
        """Start (or restart) the stream's generator from its last frame."""
        with tempfile.TemporaryDirectory(prefix="worldloom-seed-") as folder:
            # fastvideo reads its seed image from a path; it has read it by the time `reset` returns.
            path = Path(folder) / "seed.png"
            Image.fromarray(stream.last_frame).save(path)
            self._generators[stream.generator].reset(
                prompt="",
                image_path=str(path),
                keyboard_cond=torch.zeros(1, CONFIG.stream_frames, len(self.controls.keyboard)),
                mouse_cond=torch.zeros(1, CONFIG.stream_frames, self.controls.mouse_size),
                grid_sizes=torch.tensor(
                    [(CONFIG.stream_frames - 1) // 4 + 1, CONFIG.height // 8, CONFIG.width // 8]
                ),  # latent frames, height, width: the example's [150, 44, 80]
                num_frames=CONFIG.stream_frames,
                height=CONFIG.height,
                width=CONFIG.width,
                num_inference_steps=CONFIG.num_inference_steps,
            )
        stream.steps = 0

    @staticmethod
    def _sized(frame: np.ndarray) -> np.ndarray:
        """A frame as (H, W, 3) uint8 at the facts' size (the pipeline's own size rounds to 16 pixels)."""
        frame = np.ascontiguousarray(frame, dtype=np.uint8)
        if frame.shape[:2] != (CONFIG.height, CONFIG.width):
            image = Image.fromarray(frame).resize((CONFIG.width, CONFIG.height), Image.Resampling.BILINEAR)
            frame = np.asarray(image)
        return frame


def frame_conditions(controls: Controls, frames: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The keyboard (1, frames, K) and mouse (1, frames, 2) tensors of one step, the same controls on every frame
    (what fastvideo's `expand_action_to_frames` builds from one action)."""
    keyboard = torch.from_numpy(controls.keyboard)[None, None].repeat(1, frames, 1)  # (1, F, K)
    mouse = torch.from_numpy(controls.mouse)[None, None].repeat(1, frames, 1)  # (1, F, 2)
    return keyboard, mouse
