"""How fast the neural world engine serves sessions on one core: ms per frame and fps per batched session.

It steps real sessions through `WorldModelEngine`, the path the worker serves (simulator, conditioning,
dynamics transformer, decoder and JPEG, at the 64x64 it serves), with held keys changing every few frames, on one
thread as the worker runs it (oversubscribed threads are several times slower). The figures do not
depend on the weights: without a committed checkpoint the default model is measured with random weights.

Wall-clock figures are what the issue asks for; on a shared machine they also count the time other processes
hold the core. The `cpu_` figures count this thread's CPU time only (`time.thread_time`; torch runs on this
one thread), which is what the same core would give if nothing else ran on it.
"""

from __future__ import annotations

import statistics
import time

import torch

from inference.engine import StepRequest
from inference.world.model import DEFAULT_CHECKPOINT, WorldModel, WorldModelConfig
from inference.world.state import Action
from inference.world_model_engine import WorldModelEngine

KEYS = [Action.FORWARD, Action.FORWARD | Action.TURN_LEFT, Action.STRAFE_RIGHT, Action.TURN_RIGHT]
BATCH_SIZES = (1, 4, 8, 16)


def run(quick: bool) -> dict[str, float]:
    torch.set_num_threads(1)
    steps = 30 if quick else 200
    warm_up = 10  # the model's window fills in 8 frames; the first steps also pay for allocation
    model = None if DEFAULT_CHECKPOINT.exists() else WorldModel(WorldModelConfig())
    engine = WorldModelEngine(model=model)
    figures: dict[str, float] = {}
    for batch_size in BATCH_SIZES:
        sessions = [engine.open_session({"seed": 100 + index, "size": 16}) for index in range(batch_size)]
        step_ms, cpu_ms = [], []
        for tick in range(warm_up + steps):
            batch = [StepRequest(session, int(KEYS[(tick // 5) % len(KEYS)]), []) for session in sessions]
            started, cpu_started = time.perf_counter(), time.thread_time()
            engine.step(batch)
            if tick >= warm_up:
                step_ms.append((time.perf_counter() - started) * 1000)
                cpu_ms.append((time.thread_time() - cpu_started) * 1000)
        for session in sessions:
            engine.close(session)
        if batch_size == 1:
            ordered = sorted(step_ms)
            figures["ms_per_frame_p50"] = statistics.median(ordered)
            figures["ms_per_frame_p95"] = ordered[int(0.95 * (len(ordered) - 1))]
            figures["cpu_ms_per_frame_p50"] = statistics.median(cpu_ms)
        figures[f"fps_per_session_batch_{batch_size}"] = 1000 / statistics.median(step_ms)
        figures[f"cpu_fps_per_session_batch_{batch_size}"] = 1000 / statistics.median(cpu_ms)
    return figures
