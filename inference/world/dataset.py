"""Training data for the world model, rendered on the spot: random worlds, played by a scripted player.

Each episode is a random world (seed, size, palette, sky, floor, weather, creator objects) walked by a policy
that holds keys for a while as people do (mostly forward, turning at walls), with world events fired at random
times. Episodes are a pure function of their seed, so a training run is reproducible and held-out worlds are
simply seeds from another range.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inference.world.conditioning import COLUMN_FEATURES, SCALAR_FEATURES, conditioning
from inference.world.events import OBJECT_KINDS, parse_event
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import Action, initial_state, step


@dataclass(frozen=True)
class DatasetConfig:
    """How episodes are made."""

    # One event every 40 ticks: a 32-frame episode usually holds one, so the model sees before and after.
    event_probability: float = 1 / 40
    min_hold: int = 3  # ticks a key stays held: short taps and long walks both occur
    max_hold: int = 16
    held_out_seed_offset: int = 1_000_000  # held-out worlds come from seeds no training run reaches
    # Sessions last hours and their events pile up (objects, avatars, weather): training episodes that all begin
    # at a world's first tick never show the model a crowded world, and its free runs drift there.
    late_start_share: float = 0.5  # share of training episodes recorded from a random tick of a long play
    latest_start_tick: int = 1000


CONFIG = DatasetConfig()

# What the scripted player holds, with how often: mostly walking, some turning on the spot, a little of the rest.
BEHAVIOURS: tuple[tuple[int, float], ...] = (
    (Action.FORWARD, 0.32),
    (Action.FORWARD | Action.TURN_LEFT, 0.1),
    (Action.FORWARD | Action.TURN_RIGHT, 0.1),
    (Action.TURN_LEFT, 0.1),
    (Action.TURN_RIGHT, 0.1),
    (Action.STRAFE_LEFT, 0.05),
    (Action.STRAFE_RIGHT, 0.05),
    (Action.BACK, 0.06),
    (0, 0.12),
)
EVENT_KINDS_FIRED = ("night", "dawn", "day", "snow", "rain", "fog", "clear", "spawn", "spawn", "join")


@dataclass(frozen=True)
class Episodes:
    """Rendered episodes and everything the model is conditioned on, frame by frame."""

    frames: np.ndarray  # (E, L, H, W, 3) uint8
    columns: np.ndarray  # (E, L, W, COLUMN_FEATURES) float32
    scalars: np.ndarray  # (E, L, SCALAR_FEATURES) float32
    events: np.ndarray  # (E, L, 3) int64
    overlay: np.ndarray  # (E, L, H, W) uint8: stars and particles
    actions: np.ndarray  # (E, L) int64: the keys held on the tick that led to each frame (0 for the first)


def _random_color(rng: random.Random) -> list[int]:
    return [int(rng.random() * 256) for _ in range(3)]


def random_spec(seed: int) -> WorldSpec:
    """A random world: every spec field varies, so the model cannot learn one palette or one map."""
    rng = random.Random(seed)  # noqa: S311 (training data, not a secret)
    size = 8 + int(rng.random() * 17)
    return WorldSpec.from_dict(
        {
            "seed": seed,
            "size": size,
            "palette": [_random_color(rng) for _ in range(1 + int(rng.random() * 6))],
            "sky": _random_color(rng),
            "floor": _random_color(rng),
            "time_of_day": rng.choice(("day", "day", "dawn", "night")),
            "weather": rng.choice(("clear", "clear", "clear", "snow", "rain")),
            "fog": rng.random() < 0.15,
            "objects": [
                {
                    "kind": rng.choice(OBJECT_KINDS),
                    "x": 1 + rng.random() * (size - 2),
                    "y": 1 + rng.random() * (size - 2),
                }
                for _ in range(int(rng.random() * 6))
            ],
        }
    )


def _random_event(rng: random.Random, joined: int) -> list[dict]:
    kind = rng.choice(EVENT_KINDS_FIRED)
    if kind == "spawn":
        event: dict = {"kind": "spawn", "object": rng.choice(OBJECT_KINDS)}
        if rng.random() < 0.5:
            event["color"] = _random_color(rng)
        return [event]
    if kind == "join":
        name = f"player{joined}"
        held = rng.choice(BEHAVIOURS)[0]
        return [
            {"kind": "join", "name": name, "color": _random_color(rng)},
            {"kind": "move", "name": name, "action": held},
        ]
    return [{"kind": kind}]


def play(seed: int, length: int) -> tuple[WorldSpec, list[tuple[int, list[dict]]]]:
    """The world of `seed` and what the scripted player does in it: (keys held, events fired) for each tick.

    The first tick's input is (0, []): it is the opening frame, before any key. Evaluations replay these inputs
    through an engine, so that the model is measured on the same play it is trained on.
    """
    rng = random.Random(seed ^ 0x5EED)  # noqa: S311 (training data, not a secret)
    spec = random_spec(seed)
    state = initial_state(spec)
    inputs: list[tuple[int, list[dict]]] = [(0, [])]
    held, hold_left, joined = 0, 0, 0
    for _ in range(1, length):
        if hold_left == 0:
            held = rng.choices([b for b, _ in BEHAVIOURS], weights=[w for _, w in BEHAVIOURS])[0]
            hold_left = rng.randint(CONFIG.min_hold, CONFIG.max_hold)
        hold_left -= 1
        fired = _random_event(rng, joined) if rng.random() < CONFIG.event_probability else []
        joined += any(event["kind"] == "join" for event in fired)
        moved = step(state, held, [parse_event(event) for event in fired])
        inputs.append((held, fired))
        if held & Action.FORWARD and (moved.pose.x, moved.pose.y) == (state.pose.x, state.pose.y):
            # Walked into a wall: turn away, as a player would, for the rest of this hold.
            held = rng.choice((Action.TURN_LEFT, Action.TURN_RIGHT))
        state = moved
    return spec, inputs


def start_tick(seed: int) -> int:
    """The tick a training episode of `seed` is recorded from: 0, or for `late_start_share` of the seeds a
    random tick of a long play, so that the model also learns the worlds players reach after a while."""
    rng = random.Random(seed ^ 0x57A27)  # noqa: S311 (training data, not a secret)
    if rng.random() >= CONFIG.late_start_share:
        return 0
    return rng.randint(1, CONFIG.latest_start_tick)


def episode(seed: int, length: int, frame_size: int, start: int = 0) -> Episodes:
    """`length` frames of the world of `seed` from tick `start` of its play, as a batch of one."""
    spec, inputs = play(seed, start + length)
    state = initial_state(spec)
    for held, fired in inputs[1 : start + 1]:
        state = step(state, held, [parse_event(event) for event in fired])
    frames = np.zeros((length, frame_size, frame_size, 3), dtype=np.uint8)
    columns = np.zeros((length, frame_size, COLUMN_FEATURES), dtype=np.float32)
    scalars = np.zeros((length, SCALAR_FEATURES), dtype=np.float32)
    events = np.zeros((length, 3), dtype=np.int64)
    overlays = np.zeros((length, frame_size, frame_size), dtype=np.uint8)
    actions = np.zeros(length, dtype=np.int64)
    for index, (held, fired) in enumerate(inputs[start : start + length]):
        if index:
            state = step(state, held, [parse_event(event) for event in fired])
        actions[index] = held
        frames[index] = render(state, spec, frame_size, frame_size)
        condition = conditioning(state, spec, int(actions[index]), frame_size)
        columns[index], scalars[index], events[index] = condition.columns, condition.scalars, condition.events
        overlays[index] = condition.overlay
    return Episodes(frames[None], columns[None], scalars[None], events[None], overlays[None], actions[None])


def episodes(seeds: Sequence[int], length: int, frame_size: int = 64, late_starts: bool = False) -> Episodes:
    """Episodes for each seed, stacked: from each world's first tick, or (late_starts) from `start_tick`."""
    parts = [episode(seed, length, frame_size, start_tick(seed) if late_starts else 0) for seed in seeds]
    return Episodes(
        *(np.concatenate([getattr(part, name) for part in parts]) for name in Episodes.__dataclass_fields__)
    )
