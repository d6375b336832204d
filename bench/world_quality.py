"""How well the committed world model imitates the renderer on held-out worlds: the issue's acceptance figures.

Every figure is measured through `WorldModelEngine`, the path the worker serves, at the model's 64x64 (no
upscaling), against the raycaster's frames of the same simulator states, on worlds no training run saw
(`DatasetConfig.held_out_seed_offset` onwards), played by the trainer's scripted player (`dataset.play`).
PSNRs are of the mean squared error over the frames measured. The average-frame and copy-last-frame
baselines sit beside the model.

- ae_psnr_db: autoencoder round trip. one_step_psnr_db: the next frame from the true previous latents
  (teacher-forced). copy_last_psnr_db, mean_frame_psnr_db: the baselines on the same frames.
- rollout1000_psnr_db: free-running (the model's own latents as context, true actions, the player's random
  events) from a world's first tick, over the 8 frames ending at step 1,000. rollout64_psnr_db: the same
  frames, from a run of the same play restarted 64 steps before them (opened from a snapshot of the true
  state, as a resumed session is). The frames are the same, so the gap between the two is drift: what 936
  more steps of its own context cost the model. rollout_autoencoder_psnr_db: the autoencoder on those frames,
  the ceiling. rollout64_from_start_psnr_db (and its _autoencoder_ ceiling): the 8 frames ending at step 64
  of the long run; the random events crowd a world with objects and avatars as it is played, so these early
  frames are easier to draw at all, and comparing them with step 1,000 would count that as drift.
- revisit_turn_psnr_db / revisit_outback_psnr_db: the frame after a 360-degree turn, and after 20 steps out
  and 20 back, against the frame the model showed there before (clear weather, so nothing else moves).
- controllability: from one context, each action's frame is closer to that action's true frame than to every
  other action's (actions whose true frames are equal are not told apart).
- event_latency_frames / event_persistence: night, dawn, snow, rain or fog is fired in one session, and a
  session beside it plays the same keys without it. A frame "shows" the event when the change the event made
  to the model's frame (against the model's frame without it) is nearer the change it made to the true frame
  than no change at all, pixel by pixel: at least half the true change, along it. The latency is the first
  frame that shows it (1 = the frame of the tick it was fired), the persistence the share of the next 1,000
  frames (200 with --quick) that do. Comparing changes leaves out what the model draws wrong with or without
  the event (a wall a shade too dark, a blurred tree), which is the other figures' business.
  event_persistence_mean_colour: a coarser test beside it: the model's frame's mean colour
  nearer the true frame's with the event than without. Where the event changes little of the frame (snow seen
  against a close wall changes the sky and floor only) a wall drawn a shade off outweighs it, although the
  snow is plainly there. event_persistence_wrong_event: the control: another event's change taken for this
  one's (night's for dawn's, and so on) should rarely pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from inference.engine import StepRequest
from inference.world.dataset import CONFIG as DATASET_CONFIG
from inference.world.dataset import episodes, play, random_spec
from inference.world.events import parse_event
from inference.world.model import DEFAULT_CHECKPOINT
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import Action, WorldState, initial_state, step, to_snapshot
from inference.world_model_engine import WorldModelEngine

HELD_OUT = DATASET_CONFIG.held_out_seed_offset
ACTIONS = (
    0,
    Action.FORWARD,
    Action.BACK,
    Action.STRAFE_LEFT,
    Action.STRAFE_RIGHT,
    Action.TURN_LEFT,
    Action.TURN_RIGHT,
)
EVENTS = ("night", "dawn", "snow", "rain", "fog")
WARM_UP = 8  # frames of play before a measurement, so that the model's context is full


@dataclass(frozen=True)
class Sizes:
    """How much each figure is averaged over."""

    episodes: int  # 33-frame episodes for the autoencoder, one-step and baseline figures
    rollouts: int  # 1,000-step free runs
    revisits: int
    contexts: int  # controllability contexts, each tried with every action
    event_worlds: int  # worlds, each fired every event
    event_frames: int


QUICK = Sizes(episodes=8, rollouts=2, revisits=4, contexts=8, event_worlds=1, event_frames=200)
FULL = Sizes(episodes=32, rollouts=8, revisits=16, contexts=32, event_worlds=4, event_frames=1000)


def squared_error(prediction: np.ndarray, target: np.ndarray) -> float:
    """Mean squared error of two uint8 images, on the 0..1 scale."""
    return float(np.mean((prediction.astype(np.float64) - target.astype(np.float64)) ** 2) / 255**2)


def psnr(errors: list[float]) -> float:
    """PSNR in dB of the mean of per-frame squared errors (a mean of per-frame PSNRs would let one frame equal
    to its target count as 100 dB)."""
    return 10 * math.log10(1 / max(float(np.mean(errors)), 1e-10))


def clear_spec(seed: int) -> dict:
    """A held-out world in clear weather by day, so that only what the player does changes the frame."""
    return {**random_spec(seed).to_dict(), "weather": "clear", "time_of_day": "day", "fog": False}


class Played:
    """Sessions of the engine stepped in one batch beside their true simulator states; opened at the worlds'
    first tick, or (`states`) resumed from snapshots of those states."""

    def __init__(self, engine: WorldModelEngine, specs: list[dict], states: list[WorldState] | None = None) -> None:
        self.engine = engine
        self.worlds = [WorldSpec.from_dict(spec) for spec in specs]
        if states is None:
            self.sessions = [engine.open_session(spec) for spec in specs]
            self.states = [initial_state(world) for world in self.worlds]
        else:
            pairs = zip(specs, states, strict=True)
            self.sessions = [engine.open_session(spec, to_snapshot(state)) for spec, state in pairs]
            self.states = list(states)

    def step(self, inputs: list[tuple[int, list[dict]]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Step every session with its (action, events); returns (model frame, true frame) pairs."""
        self.engine.step(
            [
                StepRequest(session, action, events)
                for session, (action, events) in zip(self.sessions, inputs, strict=True)
            ]
        )
        pairs = []
        for index, (action, events) in enumerate(inputs):
            self.states[index] = step(self.states[index], action, [parse_event(event) for event in events])
            frame = self.engine.frame(self.sessions[index])
            assert frame is not None
            pairs.append((frame, render(self.states[index], self.worlds[index])))
        return pairs


@torch.inference_mode()
def teacher_forced(engine: WorldModelEngine, count: int) -> dict[str, float]:
    """Autoencoder, one-step and baseline PSNRs over held-out 33-frame episodes."""
    model = engine.model
    data = episodes(range(HELD_OUT, HELD_OUT + count), 33, model.config.frame_size)
    mean_frame = data.frames.mean(axis=(0, 1)).round().astype(np.uint8)
    figures: dict[str, list[float]] = {"ae": [], "one_step": [], "copy_last": [], "mean_frame": []}
    for episode in range(count):
        frames = torch.from_numpy(data.frames[episode]).permute(0, 3, 1, 2).float() / 255  # (L, 3, H, W)
        columns, scalars, events, overlay = (
            torch.from_numpy(getattr(data, name)[episode]) for name in ("columns", "scalars", "events", "overlay")
        )
        planes = model.planes(columns, scalars, events, overlay)
        latents = model.autoencoder.encode(frames, planes)  # (L, C, g, g)
        decoded = engine._to_uint8(model.autoencoder.decode(latents, planes))
        predicted = model.dynamics(latents[None, :-1], columns[None, 1:], scalars[None, 1:], events[None, 1:])[0]
        one_step = engine._to_uint8(model.autoencoder.decode(predicted, planes[1:]))
        truth = data.frames[episode]
        for tick in range(1, len(truth)):
            figures["ae"].append(squared_error(decoded[tick], truth[tick]))
            figures["one_step"].append(squared_error(one_step[tick - 1], truth[tick]))
            figures["copy_last"].append(squared_error(truth[tick - 1], truth[tick]))
            figures["mean_frame"].append(squared_error(mean_frame, truth[tick]))
    return {f"{name}_psnr_db": psnr(errors) for name, errors in figures.items()}


def rollouts(engine: WorldModelEngine, count: int) -> dict[str, float]:
    """Free-running PSNR at step 1,000 and, on the same frames, 64 steps after a restart; the autoencoder's
    PSNR on those frames; and the early frames of the long run (see the module's docstring)."""
    length, restart = 1000, 1000 - 64
    plays = [play(HELD_OUT + 100 + index, length + 1) for index in range(count)]
    specs = [spec.to_dict() for spec, _ in plays]
    long = Played(engine, specs)
    restarted: Played | None = None
    errors: dict[str, list[float]] = {}

    def measure(name: str, pairs: list[tuple[np.ndarray, np.ndarray]], ceiling: str | None = None) -> None:
        for index, (model, truth) in enumerate(pairs):
            errors.setdefault(name, []).append(squared_error(model, truth))
            if ceiling is not None:
                reference = _autoencoded(engine, long, index, truth)
                errors.setdefault(ceiling, []).append(squared_error(reference, truth))

    for tick in range(1, length + 1):
        inputs = [inputs[tick] for _, inputs in plays]
        pairs = long.step(inputs)
        if restarted is not None:
            restarted_pairs = restarted.step(inputs)
        if tick == restart:
            restarted = Played(engine, specs, list(long.states))
        if 64 - 8 < tick <= 64:
            measure("rollout64_from_start_psnr_db", pairs, "rollout64_from_start_autoencoder_psnr_db")
        if length - 8 < tick:
            measure("rollout1000_psnr_db", pairs, "rollout_autoencoder_psnr_db")
            measure("rollout64_psnr_db", restarted_pairs)
    return {name: psnr(values) for name, values in errors.items()}


@torch.inference_mode()
def _autoencoded(engine: WorldModelEngine, played: Played, index: int, truth: np.ndarray) -> np.ndarray:
    """The autoencoder's round trip of a true frame of one played session, as uint8 (H, W, 3)."""
    model = engine.model
    columns, scalars, events, overlay = engine._conditioning([(played.worlds[index], played.states[index], 0)])
    planes = model.planes(columns, scalars, events, overlay)
    frame = torch.from_numpy(truth).permute(2, 0, 1)[None].float() / 255  # (1, 3, H, W)
    return engine._to_uint8(model.autoencoder.decode(model.autoencoder.encode(frame, planes), planes))[0]


def _returns_home(spec: dict) -> bool:
    """Whether 20 steps forward and 20 back (after the warm-up) bring the player back to the same pose."""
    state = initial_state(WorldSpec.from_dict(spec))
    for _ in range(WARM_UP):
        state = step(state, 0)
    start = state.pose
    for action in [Action.FORWARD] * 20 + [Action.BACK] * 20:
        state = step(state, action)
    moved = step(initial_state(WorldSpec.from_dict(spec)), Action.FORWARD)
    return state.pose == start and moved.pose != initial_state(WorldSpec.from_dict(spec)).pose


def revisits(engine: WorldModelEngine, count: int) -> dict[str, float]:
    """The frame after a full turn, and after walking out and back, against the frame shown there before."""
    turn_ticks = 64  # `SimulatorConfig.angle_steps / turn_speed`: a full turn
    figures = {}
    candidates = (clear_spec(HELD_OUT + 200 + index) for index in range(50 * count))
    walkable = [spec for spec in candidates if _returns_home(spec)][:count]
    trips = {
        "revisit_turn_psnr_db": ([clear_spec(HELD_OUT + 200 + index) for index in range(count)], turn_ticks),
        "revisit_outback_psnr_db": (walkable, 40),
    }
    for name, (specs, length) in trips.items():
        played = Played(engine, specs)
        for _ in range(WARM_UP):
            before = played.step([(0, [])] * len(specs))
        if name == "revisit_turn_psnr_db":
            path = [Action.TURN_LEFT] * length
        else:
            path = [Action.FORWARD] * 20 + [Action.BACK] * 20
        for action in path:
            after = played.step([(int(action), [])] * len(specs))
        figures[name] = psnr([squared_error(a[0], b[0]) for a, b in zip(after, before, strict=True)])
    return figures


def controllability(engine: WorldModelEngine, count: int) -> dict[str, float]:
    """Share of (context, action) cases whose frame is nearest that action's true frame among all actions'."""
    successes, cases = 0, 0
    for context in range(count):
        spec, inputs = play(HELD_OUT + 300 + context, WARM_UP + 1)
        # One session per action, all replaying the same inputs (so the same context), then each its action.
        played = Played(engine, [spec.to_dict()] * len(ACTIONS))
        for tick in range(1, WARM_UP + 1):
            played.step([inputs[tick]] * len(ACTIONS))
        frames = played.step([(int(action), []) for action in ACTIONS])
        models = [model.astype(np.float64) for model, _ in frames]
        truths = [truth.astype(np.float64) for _, truth in frames]
        for index, model in enumerate(models):
            rivals = [other for other in truths if not np.array_equal(other, truths[index])]
            if not rivals:
                continue
            own = np.mean((model - truths[index]) ** 2)
            successes += all(own < np.mean((model - rival) ** 2) for rival in rivals)
            cases += 1
    return {"controllability": successes / max(cases, 1)}


def events(engine: WorldModelEngine, worlds: int, frames: int) -> dict[str, float]:
    """Latency and persistence of each event, against the same play without it (see the module's docstring)."""
    latencies, shown, shown_mean_colour, shown_wrong_event = [], [], [], []
    for world in range(worlds):
        seed = HELD_OUT + 400 + world
        spec = clear_spec(seed)
        keys = [action for action, _ in play(seed, WARM_UP + frames + 1)[1]]  # the player's keys, not its events
        # One session per event and, last, one without any: the same keys, so the same walk.
        played = Played(engine, [spec] * (len(EVENTS) + 1))
        first_shown: list[int | None] = [None] * len(EVENTS)
        for tick in range(1, WARM_UP + frames + 1):
            fired = tick == WARM_UP + 1
            events_fired = [[{"kind": kind}] if fired else [] for kind in EVENTS] + [[]]
            stepped = played.step([(keys[tick], kinds) for kinds in events_fired])
            pairs = [(model.astype(np.float64), truth.astype(np.float64)) for model, truth in stepped]
            if tick <= WARM_UP:
                continue
            model_without, truth_without = pairs[-1]
            colour_without = _mean_colour(truth_without)
            changes = [(model - model_without, truth - truth_without) for model, truth in pairs[:-1]]
            for index, (model_change, truth_change) in enumerate(changes):
                shows = _nearer_than_no_change(model_change, truth_change)
                shown.append(shows)
                if shows and first_shown[index] is None:
                    first_shown[index] = tick - WARM_UP
                # The coarser mean-colour test, and the control: another event's change taken for this one's.
                model, truth = pairs[index]
                colour = _mean_colour(model)
                shown_mean_colour.append(
                    np.linalg.norm(colour - _mean_colour(truth)) < np.linalg.norm(colour - colour_without)
                )
                shown_wrong_event.append(_nearer_than_no_change(changes[index - 1][0], truth_change))
        # An event never shown counts as late as the whole run.
        latencies += [frames if first is None else first for first in first_shown]
    return {
        "event_latency_frames": float(np.mean(latencies)),
        "event_persistence": float(np.mean(shown)),
        "event_persistence_mean_colour": float(np.mean(shown_mean_colour)),
        "event_persistence_wrong_event": float(np.mean(shown_wrong_event)),
    }


def _nearer_than_no_change(model_change: np.ndarray, truth_change: np.ndarray) -> bool:
    """Whether the change an event made to the model's (H, W, 3) frame is nearer the change it made to the true
    frame than no change at all: at least half of the true change, along it."""
    return bool(np.sum((model_change - truth_change) ** 2) < np.sum(model_change**2))


def _mean_colour(image: np.ndarray) -> np.ndarray:
    return image.reshape(-1, 3).mean(axis=0)


def run(quick: bool) -> dict[str, float]:
    if not DEFAULT_CHECKPOINT.exists():
        raise FileNotFoundError(
            f"no world model at {DEFAULT_CHECKPOINT}; train one with python -m inference.world.train"
        )
    torch.set_num_threads(1)
    sizes = QUICK if quick else FULL
    engine = WorldModelEngine(width=64, height=64)
    return {
        **teacher_forced(engine, sizes.episodes),
        **rollouts(engine, sizes.rollouts),
        **revisits(engine, sizes.revisits),
        **controllability(engine, sizes.contexts),
        **events(engine, sizes.event_worlds, sizes.event_frames),
    }
