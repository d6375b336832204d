"""The Matrix-Game 2.0 engine on the CPU: its controls against fastvideo's own source, its weights checks, and its
chunk loop driven by a real Wan 2.1 DiT built from a tiny random configuration.

Where the CPU stops: fastvideo 0.2.1 (installed by the Makefile with --no-deps, with imageio) cannot import its
Matrix-Game 2.0 model here. Every fastvideo module reaches `fastvideo.platforms`, which imports `fastvideo.utils`,
which imports `torchvision.utils` at its top; PyPI's Linux torchvision wheels are CUDA builds (their `_C.so` links
libc10_cuda.so and libtorch_cuda.so), and with our CPU torch 2.13 their operators never register, so importing
torchvision fails ("operator torchvision::nms does not exist"). The CPU build of torchvision lives only on
download.pytorch.org, which this project does not use. Past that (tried once by hand, with torchvision's Python
code loaded and its missing operators skipped, plus einops, remote-pdb and ftfy), the model module imports, but
building `CausalMatrixGame2WanModel` (fastvideo's causal DiT with its action module) fails in its first attention
layer: "Invalid attention backend for CPU". fastvideo 0.2.1's `CpuPlatform` does not override
`get_attn_backend_cls`, whose base answers no backend: fastvideo has attention backends for CUDA, ROCm, MPS and
NPU, none for the CPU. So neither the DiT nor its streaming pipeline can be built on the CPU.

The deepest level that runs is diffusers' `WanTransformer3DModel`, the Wan 2.1 image-to-video DiT that Matrix-Game
2.0 was trained from (fastvideo's model reimplements its blocks and adds keyboard and mouse attention). The
generator below drives it in place of fastvideo's `StreamingVideoGenerator`, with the same `reset` and `step`
calls, and feeds the step's keyboard and mouse tensors in as the DiT's conditioning tokens, so the engine's own
loop (controls, per-frame tensors, seed image file, stream restart, frame sizing) runs end to end on real weights.
fastvideo's own functions that need no torchvision are read from its installed source and run on their own.
"""

from __future__ import annotations

import ast
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from inference.engine import create_engine
from inference.video.matrix_game import (
    CONFIG,
    MatrixGame2Engine,
    fastvideo_problem,
    frame_conditions,
    weights_problem,
)
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import Action, initial_state

diffusers = pytest.importorskip("diffusers", reason="diffusers is installed by the Makefile (--no-deps)")
SPEC = {"seed": 3, "size": 16}
LATENT_CHANNELS = 4  # Wan's VAE has 16; four keep the tiny DiT's tensors small


def fastvideo_source(relative: str) -> ast.Module:
    """A module of the installed fastvideo wheel, parsed, not imported."""
    try:
        path = Path(str(distribution("fastvideo").locate_file(f"fastvideo/{relative}")))
    except PackageNotFoundError:
        pytest.skip("fastvideo is installed by the Makefile (pip install --no-deps fastvideo==0.2.1)")
    return ast.parse(path.read_text())


def fastvideo_constants(tree: ast.Module) -> dict[str, Any]:
    """The module's top-level literal assignments (CAM_VALUE, KEYBOARD_MAP_4, CAMERA_MAP...), in order; a name
    that an earlier constant defined (CAMERA_MAP's CAM_VALUE) is read as that constant."""
    values: dict[str, Any] = {}

    class Named(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Constant(values[node.id]) if node.id in values else node

    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(Named().visit(node.value))
            except ValueError:  # a logger, a function call: not a constant to compare
                continue
    return values


class TinyWanStream:
    """A stream with fastvideo's `reset`/`step` calls around diffusers' real Wan 2.1 DiT, tiny and random.

    `reset` reads the seed image from its path and encodes it to a latent (a strided convolution standing for the
    VAE's encoder); `step` denoises a block of 3 latent frames conditioned on that latent (Wan's image-to-video
    input: noise, a mask and the image latent) and on the step's keyboard and mouse, embedded per frame as the
    DiT's text tokens, and decodes them to 12 frames (a transposed convolution standing for the VAE's decoder).
    """

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.transformer = diffusers.WanTransformer3DModel(
            patch_size=(1, 2, 2),
            num_attention_heads=2,
            attention_head_dim=8,
            in_channels=LATENT_CHANNELS * 2 + 4,  # noise, image latent, and Wan's 4-channel first-frame mask
            out_channels=LATENT_CHANNELS,
            text_dim=16,
            freq_dim=16,
            ffn_dim=32,
            num_layers=2,
            cross_attn_norm=True,
            qk_norm="rms_norm_across_heads",
            rope_max_seq_len=64,
        ).eval()
        self.actions = nn.Linear(6, 16)  # the step's keyboard (4) and mouse (2) of each frame -> one text token
        self.encoder = nn.Conv2d(3, LATENT_CHANNELS, kernel_size=8, stride=8)
        self.decoder = nn.ConvTranspose2d(LATENT_CHANNELS, 3, kernel_size=8, stride=8)
        self.resets: list[dict[str, Any]] = []
        self.steps: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.image_latent: torch.Tensor | None = None

    @torch.inference_mode()
    def reset(self, prompt: str = "", image_path: str | None = None, num_frames: int = 120, **kwargs: Any) -> None:
        assert image_path is not None
        seed = np.array(Image.open(image_path).convert("RGB"))  # (H, W, 3): the engine's file, read back
        self.resets.append({"prompt": prompt, "seed": seed, "num_frames": num_frames, **kwargs})
        pixels = torch.from_numpy(seed).permute(2, 0, 1)[None].float() / 127.5 - 1  # (1, 3, H, W)
        self.image_latent = self.encoder(pixels)[:, :, None].repeat(1, 1, 3, 1, 1)  # (1, C, 3, h, w)
        self.noise = torch.Generator().manual_seed(0)  # a stream's noise depends on its steps alone

    @torch.inference_mode()
    def step(self, keyboard_cond: torch.Tensor, mouse_cond: torch.Tensor) -> tuple[list[np.ndarray], None]:
        assert self.image_latent is not None, "reset() first, as fastvideo requires"
        self.steps.append((keyboard_cond.clone(), mouse_cond.clone()))
        B, C, T, h, w = self.image_latent.shape  # batch, latent channels, latent frames, latent height, width
        tokens = self.actions(torch.cat([keyboard_cond, mouse_cond], dim=-1))  # (1, 12, 16)
        latents = torch.randn(B, C, T, h, w, generator=self.noise)
        mask = torch.ones(B, 4, T, h, w)
        for timestep in (1000, 666, 333):  # the distilled checkpoints' DMD steps
            inputs = torch.cat([latents, mask, self.image_latent], dim=1)  # (B, 2C + 4, T, h, w)
            velocity = self.transformer(inputs, torch.tensor([timestep]), tokens).sample  # (B, C, T, h, w)
            latents = latents - velocity * (timestep / 1000 / 3)
        pixels = self.decoder(latents[0].permute(1, 0, 2, 3))  # (T, 3, H, W)
        pixels = pixels.repeat_interleave(4, dim=0)  # (4T, 3, H, W): the VAE's 4 frames per latent frame
        frames = ((pixels.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
        return list(frames), None


@pytest.fixture(scope="module")
def stream() -> TinyWanStream:
    return TinyWanStream()


def test_the_keys_map_as_fastvideo_s_matrix_game_demo_sends_them() -> None:
    constants = fastvideo_constants(fastvideo_source("models/dits/matrixgame2/utils.py"))
    keys, camera = constants["KEYBOARD_MAP_4"], constants["CAMERA_MAP"]
    mapping = MatrixGame2Engine.controls
    for action, key in (
        (Action.FORWARD, "w"),
        (Action.BACK, "s"),
        (Action.STRAFE_LEFT, "a"),
        (Action.STRAFE_RIGHT, "d"),
    ):
        assert mapping.controls(action).keyboard.tolist() == keys[key]
        assert mapping.controls(action).mouse.tolist() == camera["u"]
    assert mapping.controls(Action.TURN_LEFT).mouse.tolist() == pytest.approx(camera["j"])
    assert mapping.controls(Action.TURN_RIGHT).mouse.tolist() == pytest.approx(camera["l"])
    assert CONFIG.camera_speed == constants["CAM_VALUE"]


def test_a_step_s_tensors_are_those_fastvideo_expands_from_one_action() -> None:
    tree = fastvideo_source("models/dits/matrixgame2/utils.py")
    (function,) = [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "expand_action_to_frames"
    ]
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(ast.Module([function], []), "<fastvideo>", "exec"), namespace)  # noqa: S102 - fastvideo's own code
    controls = MatrixGame2Engine.controls.controls(Action.FORWARD | Action.TURN_RIGHT)
    theirs = namespace["expand_action_to_frames"](
        {"keyboard": torch.from_numpy(controls.keyboard), "mouse": torch.from_numpy(controls.mouse)}, 12
    )
    ours = frame_conditions(controls, 12)
    assert [tensor.shape for tensor in ours] == [(1, 12, 4), (1, 12, 2)]
    assert all(torch.equal(mine, fastvideo) for mine, fastvideo in zip(ours, theirs, strict=True))


def test_fastvideo_s_model_does_not_import_on_this_cpu_torch_and_the_engine_says_why() -> None:
    fastvideo_source("entrypoints/streaming_generator.py")
    assert "torchvision" in fastvideo_problem() or "imageio" in fastvideo_problem()
    availability = MatrixGame2Engine.available()
    assert not availability and availability.reason


def complete_weights(folder: Path) -> Path:
    for part in ("transformer", "vae", "scheduler", "image_encoder", "image_processor"):
        (folder / part).mkdir(parents=True)
    (folder / "model_index.json").write_text("{}")
    (folder / "transformer" / "diffusion_pytorch_model.safetensors").write_bytes(b"")
    return folder


def test_the_weights_folder_must_hold_every_part_the_pipeline_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "WORLDLOOM_MATRIX_GAME_WEIGHTS" in weights_problem(None)
    assert "does not exist" in weights_problem(tmp_path / "absent")
    folder = complete_weights(tmp_path / "Matrix-Game-2.0-Base-Distilled-Diffusers")
    assert weights_problem(folder) == ""
    (folder / "transformer" / "diffusion_pytorch_model.safetensors").unlink()
    assert "no transformer/*.safetensors" in weights_problem(folder)
    (folder / "vae").rmdir()
    assert "lacks vae" in weights_problem(folder)
    monkeypatch.setenv("WORLDLOOM_MATRIX_GAME_WEIGHTS", str(folder))
    with pytest.raises(RuntimeError, match="cannot start"):
        MatrixGame2Engine(device="cuda")
    with pytest.raises(ValueError, match="--device cuda"):
        create_engine("matrix-game-2", device="cpu")


def test_the_engine_s_chunk_loop_runs_a_real_wan_dit_one_frame_per_tick(stream: TinyWanStream) -> None:
    engine = MatrixGame2Engine(generators=[stream])
    session = engine.open_session(SPEC)
    world = WorldSpec.from_dict(SPEC)
    first_view = render(initial_state(world), world, CONFIG.width, CONFIG.height)
    assert np.array_equal(stream.resets[-1]["seed"], first_view)  # the seed image went through fastvideo's path
    assert stream.resets[-1]["grid_sizes"].tolist() == [150, 44, 80]  # what fastvideo's example passes
    actions = [int(Action.FORWARD)] * 12 + [int(Action.TURN_LEFT)] * 12 + [0]
    frames = [engine.step([(session, action, [])])[0] for action in actions]
    assert len(stream.steps) == 3 and [frame.number for frame in frames] == list(range(1, 26))
    assert all(frame.pixels is not None and frame.pixels.shape == (352, 640, 3) for frame in frames)
    # W held through the first chunk, then the left arrow: the second chunk is made under both (the latch), the
    # third under the arrow alone.
    keyboards = [keyboard[0, 0].tolist() for keyboard, _ in stream.steps]
    yaws = [mouse[0, :, 1].tolist() for _, mouse in stream.steps]
    assert keyboards == [[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    assert yaws == [[0.0] * 12, pytest.approx([-0.1] * 12), pytest.approx([-0.1] * 12)]
    # The actions reach the DiT: the same stream standing still draws another first chunk.
    still = MatrixGame2Engine(generators=[TinyWanStream()])
    standing = still.open_session(SPEC)
    assert not np.array_equal(still.step([(standing, 0, [])])[0].pixels, frames[0].pixels)


def test_a_spent_stream_restarts_from_the_last_frame_shown(stream: TinyWanStream) -> None:
    engine = MatrixGame2Engine(generators=[stream])
    session = engine.open_session(SPEC)
    for _ in range(12):
        last = engine.step([(session, 0, [])])[0]
    engine._sessions[session].context.steps = CONFIG.steps_per_stream
    resets = len(stream.resets)
    engine.step([(session, 0, [])])
    assert len(stream.resets) == resets + 1 and np.array_equal(stream.resets[-1]["seed"], last.pixels)


def test_each_session_holds_a_stream_and_gives_it_back(stream: TinyWanStream) -> None:
    engine = MatrixGame2Engine(generators=[stream])
    first = engine.open_session(SPEC)
    with pytest.raises(RuntimeError, match="1 Matrix-Game streams are in use"):
        engine.open_session(SPEC)
    engine.close(first)
    assert engine.open_session(SPEC)
    assert MatrixGame2Engine.facts.codec == "h264" and MatrixGame2Engine.facts.device == "cuda"
    assert (MatrixGame2Engine.facts.width, MatrixGame2Engine.facts.height) == (640, 352)
