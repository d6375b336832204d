"""The chunked video engine base, driven by a tiny real torch video model written for these tests."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from inference.engine import EngineFacts, RaycastEngine
from inference.narrative.setting import HookRule
from inference.video.chunked import ChunkedVideoEngine, ControlMapping, Controls, scene_prompt
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import Action, from_snapshot, initial_state, step

SPEC: dict[str, Any] = {"seed": 7, "size": 16}
WIDTH, HEIGHT, CHUNK = 32, 24, 4
PROMPT_BYTES = 96


class TinyVideoModel(nn.Module):
    """Draws `frames` frames after a picture: each is a convolution of the one before, shifted in colour by the
    chunk's controls and by its prompt (bytes summed through an embedding)."""

    def __init__(self, frames: int, controls: int) -> None:
        super().__init__()
        self.frames = frames
        self.convolution = nn.Conv2d(3, 3, kernel_size=3, padding=1)
        self.controls = nn.Linear(controls, 3)
        self.text = nn.EmbeddingBag(256, 3, mode="mean")

    @torch.inference_mode()
    def forward(self, previous: torch.Tensor, controls: torch.Tensor, prompts: torch.Tensor) -> torch.Tensor:
        # previous: (B, 3, H, W) batch, channels, height, width, values 0..1; controls (B, 6); prompts (B, L) bytes
        shift = (self.controls(controls) + self.text(prompts))[:, :, None, None]  # (B, 3, 1, 1)
        frames = []
        frame = previous
        for _ in range(self.frames):
            frame = torch.sigmoid(self.convolution(frame) + shift)  # (B, 3, H, W)
            frames.append(frame)
        return torch.stack(frames, dim=1)  # (B, N, 3, H, W)


def tensors(images: list[np.ndarray]) -> torch.Tensor:
    return torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255  # (B, 3, H, W)


def prompt_bytes(prompts: list[str]) -> torch.Tensor:
    return torch.tensor([list(prompt.encode()[:PROMPT_BYTES].ljust(PROMPT_BYTES)) for prompt in prompts])


class TinyChunkedEngine(ChunkedVideoEngine):
    """The tiny model as a chunked engine; it records the batches it generated."""

    name = "tiny-chunked"
    facts = EngineFacts(device="cpu", width=WIDTH, height=HEIGHT, frames_per_second=20, codec="h264")
    controls = ControlMapping(
        keyboard=(Action.FORWARD, Action.BACK, Action.STRAFE_LEFT, Action.STRAFE_RIGHT),
        mouse=((Action.TURN_LEFT, (0.0, -0.1)), (Action.TURN_RIGHT, (0.0, 0.1))),
        mouse_size=2,
    )
    chunk_frames = CHUNK
    takes_prompt = True

    def __init__(self, max_batch: int = 8, extra_frames: int = 0, device: str = "cpu") -> None:
        super().__init__(max_batch=max_batch)
        torch.manual_seed(0)
        self.model = TinyVideoModel(CHUNK + extra_frames, 6).eval()
        self.batches: list[tuple[list[Controls], list[str]]] = []

    def start(self, seed: np.ndarray, prompt: str) -> dict[str, Any]:
        return {"seed": seed, "frame": seed}

    def generate(self, contexts: list[Any], controls: list[Controls], prompts: list[str]) -> list[np.ndarray]:
        self.batches.append((controls, prompts))
        chunks = self.run(
            [context["frame"] for context in contexts],
            [np.concatenate([control.keyboard, control.mouse]) for control in controls],
            prompts,
        )
        for context, chunk in zip(contexts, chunks, strict=True):
            context["frame"] = chunk[-1]
        return chunks

    def run(self, frames: list[np.ndarray], controls: list[np.ndarray], prompts: list[str]) -> list[np.ndarray]:
        """The model's chunks after `frames`, as uint8 (N, H, W, 3)."""
        out = self.model(tensors(frames), torch.from_numpy(np.stack(controls)), prompt_bytes(prompts))
        return list((out * 255).round().to(torch.uint8).permute(0, 1, 3, 4, 2).numpy())


def controls_of(engine: TinyChunkedEngine, action: int) -> np.ndarray:
    control = engine.controls.controls(action)
    return np.concatenate([control.keyboard, control.mouse])


def test_the_host_gets_one_frame_per_tick_though_the_model_draws_chunks() -> None:
    engine = TinyChunkedEngine()
    session = engine.open_session(SPEC, session="a")
    frames = [engine.step([(session, 0, [])])[0] for _ in range(10)]
    assert [frame.number for frame in frames] == list(range(1, 11))
    assert len(engine.batches) == 3  # ticks 1, 5 and 9 start a chunk of 4
    assert all(frame.pixels is not None and frame.pixels.shape == (HEIGHT, WIDTH, 3) for frame in frames)
    assert all(frame.pixels is not None and frame.pixels.dtype == np.uint8 and frame.jpeg == b"" for frame in frames)
    first_chunk = engine.run(
        [render(initial_state(WorldSpec.from_dict(SPEC)), WorldSpec.from_dict(SPEC), WIDTH, HEIGHT)],
        [controls_of(engine, 0)],
        [scene_prompt(initial_state(WorldSpec.from_dict(SPEC)))],
    )[0]
    assert all(np.array_equal(frame.pixels, expected) for frame, expected in zip(frames[:4], first_chunk, strict=True))
    assert not np.array_equal(frames[0].pixels, frames[1].pixels)


def test_the_keys_held_during_a_chunk_decide_the_next_chunk() -> None:
    engine = TinyChunkedEngine()
    session = engine.open_session(SPEC, session="a")
    # Still at tick 1, when the first chunk is drawn; a tap of the left arrow at tick 2 and of W at tick 3.
    actions = [0, Action.TURN_LEFT, Action.FORWARD, 0, 0, 0, 0, 0, 0]
    frames = [engine.step([(session, int(action), [])])[0] for action in actions]
    latched = [batch[0][0] for batch in engine.batches]
    assert [list(control.keyboard) for control in latched] == [[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    assert [list(control.mouse) for control in latched] == [[0, 0], pytest.approx([0, -0.1]), [0, 0]]
    # The second chunk is the model's, from the first chunk's last frame, under both taps.
    expected = engine.run(
        [frames[3].pixels], [controls_of(engine, Action.TURN_LEFT | Action.FORWARD)], [engine.batches[1][1][0]]
    )[0]
    assert all(np.array_equal(frame.pixels, picture) for frame, picture in zip(frames[4:8], expected, strict=True))


def test_a_model_that_reads_text_is_given_the_scene_the_world_events_made() -> None:
    engine = TinyChunkedEngine()
    session = engine.open_session(SPEC)
    engine.step([(session, 0, [])])
    engine.step([(session, 0, [{"kind": "night"}, {"kind": "snow"}])])  # typed "make it a snowy night", mid-chunk
    for _ in range(3):
        engine.step([(session, 0, [])])
    before, after = (prompts[0] for _, prompts in engine.batches)
    assert "daylight" in before and "night" not in before
    assert "at night" in after and "falling snow" in after
    deaf = TinyChunkedEngine()
    deaf.takes_prompt = False
    deaf.step([(deaf.open_session(SPEC), 0, [])])
    assert deaf.batches[0][1] == [""]


def test_the_control_mapping_turns_keys_into_the_model_s_keyboard_and_mouse() -> None:
    mapping = TinyChunkedEngine.controls
    walk = mapping.controls(Action.FORWARD | Action.STRAFE_RIGHT | Action.TURN_LEFT)
    assert walk.keyboard.tolist() == [1, 0, 0, 1] and walk.mouse.tolist() == pytest.approx([0, -0.1])
    assert mapping.controls(Action.TURN_LEFT | Action.TURN_RIGHT).mouse.tolist() == [0, 0]
    assert mapping.controls(0).keyboard.tolist() == [0, 0, 0, 0]
    turn_keys = ControlMapping(keyboard=(Action.TURN_LEFT, Action.TURN_RIGHT))
    assert turn_keys.controls(Action.TURN_RIGHT).keyboard.tolist() == [0, 1]
    assert turn_keys.controls(Action.TURN_RIGHT).mouse.shape == (0,)
    with pytest.raises(ValueError, match="2 values"):
        ControlMapping(keyboard=(), mouse=((Action.TURN_LEFT, (0.1,)),), mouse_size=2)


def reference_png(color: tuple[int, int, int], size: tuple[int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def test_a_session_starts_from_the_world_s_reference_image_else_from_the_renderer() -> None:
    engine = TinyChunkedEngine()
    engine.open_session({**SPEC, "reference_image": reference_png((200, 30, 40), (300, 120))}, session="ref")
    engine.open_session(SPEC, session="drawn")
    referenced = engine._sessions["ref"].context["seed"]
    assert referenced.shape == (HEIGHT, WIDTH, 3) and np.all(referenced == (200, 30, 40))
    world = WorldSpec.from_dict(SPEC)
    assert np.array_equal(engine._sessions["drawn"].context["seed"], render(initial_state(world), world, WIDTH, HEIGHT))
    with pytest.raises(ValueError, match="base64 PNG or JPEG"):
        engine.open_session({**SPEC, "reference_image": base64.b64encode(b"not an image").decode()})


def test_a_snapshot_restores_the_session_and_restarts_the_model_from_the_last_frame() -> None:
    engine = TinyChunkedEngine()
    session = engine.open_session({**SPEC, "reference_image": reference_png((10, 200, 90), (64, 48))}, session="a")
    for action in (Action.FORWARD, Action.FORWARD, Action.TURN_RIGHT, 0, 0, Action.TURN_LEFT):
        last = engine.step([(session, int(action), [{"kind": "night"}] if action == 0 else [])])[0]
    snapshot = engine.snapshot(session)
    held = engine._sessions[session]

    restored_engine = TinyChunkedEngine()
    restored = restored_engine.open_session({**SPEC, "reference_image": reference_png((0, 0, 0), (8, 8))}, snapshot)
    again = restored_engine._sessions[restored]
    assert (again.state.tick, again.state.pose, again.state.time_of_day) == (6, held.state.pose, "night")
    # The images travel as JPEG at 92 with full colour: a flat colour comes back within a level, a frame close by.
    assert np.abs(again.seed.astype(int) - (10, 200, 90)).max() <= 1
    assert last.pixels is not None and np.abs(again.last_frame.astype(int) - last.pixels).mean() < 3
    assert again.context["frame"] is again.last_frame and again.latched == Action.TURN_LEFT
    # Its first chunk comes from the last frame under the latch it was saved with, and numbering goes on.
    frame = restored_engine.step([(restored, 0, [])])[0]
    expected = restored_engine.run(
        [again.context["seed"]], [controls_of(engine, Action.TURN_LEFT)], [scene_prompt(again.state)]
    )
    assert frame.number == 7 and np.array_equal(frame.pixels, expected[0][0])
    assert restored_engine.batches[0][1][0] == scene_prompt(again.state) and "night" in scene_prompt(again.state)


def test_a_world_state_snapshot_of_another_engine_opens_here() -> None:
    raycaster = RaycastEngine()
    session = raycaster.open_session(SPEC)
    for _ in range(5):
        raycaster.step([(session, int(Action.FORWARD | Action.TURN_LEFT), [])])
    snapshot = raycaster.snapshot(session)
    engine = TinyChunkedEngine()
    opened = engine.open_session(SPEC, snapshot)
    state = from_snapshot(snapshot)
    assert engine._sessions[opened].state == state
    assert np.array_equal(engine._sessions[opened].seed, render(state, WorldSpec.from_dict(SPEC), WIDTH, HEIGHT))


def test_positions_follow_the_simulator_under_the_chunks_actions_so_area_hooks_fire_alike() -> None:
    engine = TinyChunkedEngine()
    session = engine.open_session(SPEC, session="a")
    raycaster = RaycastEngine()
    beside = raycaster.open_session(SPEC)
    pattern = [Action.FORWARD] * 3 + [Action.TURN_RIGHT] * 6 + [Action.FORWARD | Action.STRAFE_LEFT] * 15
    frames = [engine.step([(session, int(action), [])])[0] for action in pattern]
    # The actions the chunks were drawn under, tick by tick, are what the raycaster is given.
    chunk_actions = []
    latch = 0
    for tick, action in enumerate(pattern):
        latch |= action
        if tick % CHUNK == 0:
            current, latch = latch, 0
        chunk_actions.append(current)
    expected = [raycaster.step([(beside, int(action), [])])[0].position for action in chunk_actions]
    assert [frame.position for frame in frames] == expected
    assert len({frame.position for frame in frames}) > 5  # the player went somewhere
    target = expected[-4]
    hook = HookRule("well", "area", {"x": target[0], "y": target[1], "radius": 0.05}, "A well.", (), {})
    fired_here = [frame.number for frame in frames if hook.fired_at(frame.position)]
    assert fired_here and fired_here == [tick + 1 for tick, position in enumerate(expected) if hook.fired_at(position)]
    world = WorldSpec.from_dict(SPEC)
    state = initial_state(world)
    for action in chunk_actions:
        state = step(state, action)
    assert frames[-1].position == state.pose.cell_position


def test_sessions_whose_chunks_run_out_together_are_drawn_in_one_batch() -> None:
    engine = TinyChunkedEngine(max_batch=2)
    for name in ("a", "b", "c"):
        engine.open_session(SPEC, session=name)
    engine.step([("a", 0, []), ("b", int(Action.FORWARD), []), ("c", 0, [])])
    assert [len(controls) for controls, _ in engine.batches] == [2, 1]
    engine.open_session(SPEC, session="d")
    engine.step([("a", 0, []), ("d", 0, [])])  # a plays its chunk on; only d draws
    assert [len(controls) for controls, _ in engine.batches] == [2, 1, 1]
    batched = engine.batches[0]
    alone = TinyChunkedEngine()
    alone.open_session(SPEC, session="b")
    assert np.array_equal(alone.step([("b", int(Action.FORWARD), [])])[0].pixels, engine._sessions["b"].last_frame)
    assert batched[0][1].keyboard.tolist() == [1, 0, 0, 0]


def test_a_chunk_longer_than_the_engine_declares_is_refused() -> None:
    engine = TinyChunkedEngine(extra_frames=1)
    session = engine.open_session(SPEC)
    with pytest.raises(RuntimeError, match=r"1\.\.4 uint8 frames"):
        engine.step([(session, 0, [])])
