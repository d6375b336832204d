"""How fast the raycaster engine serves sessions on one thread: ms per frame and fps per batched session.

It steps real sessions through the engine interface the worker calls (render + JPEG encode), with held
keys changing every few frames so the view keeps moving.
"""

from __future__ import annotations

import statistics
import time

from inference.engine import StepRequest, create_engine
from inference.world.state import Action

KEYS = [Action.FORWARD, Action.FORWARD | Action.TURN_LEFT, Action.STRAFE_RIGHT, Action.TURN_RIGHT]
BATCH_SIZES = (1, 4, 8, 16)


def run(quick: bool) -> dict[str, float]:
    steps = 30 if quick else 200
    figures: dict[str, float] = {}
    for batch_size in BATCH_SIZES:
        engine = create_engine("raycaster")
        sessions = [engine.open_session({"seed": 100 + index, "size": 16}) for index in range(batch_size)]
        step_ms = []
        for tick in range(steps):
            batch = [StepRequest(session, int(KEYS[(tick // 5) % len(KEYS)]), []) for session in sessions]
            started = time.perf_counter()
            engine.step(batch)
            step_ms.append((time.perf_counter() - started) * 1000)
        if batch_size == 1:
            ordered = sorted(step_ms)
            figures["ms_per_frame_p50"] = statistics.median(ordered)
            figures["ms_per_frame_p95"] = ordered[int(0.95 * (len(ordered) - 1))]
        figures[f"fps_per_session_batch_{batch_size}"] = 1000 / statistics.median(step_ms)
    return figures
