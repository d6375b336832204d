"""How a chunked video engine (Matrix-Game 2.0 by default) serves sessions on one GPU.

Opens N sessions on the engine, ticks them all at the engine's own rate (`facts.frames_per_second`) with a scripted
pattern of held keys that changes mid-chunk, and prints, for each N: fps per session, ms per chunk (the ticks on
which a chunk is drawn), input-to-frame latency (from the tick a key changes to the return of the first frame
drawn under it), and GPU memory; then sessions per GPU, the largest N that kept up with the engine's rate. Flat
JSON goes to bench/results/gpu_engine.json.

    python -m bench.gpu_engine --weights /models/Matrix-Game-2.0-Base-Distilled-Diffusers --sessions 1 2

Without CUDA, or when the engine says it cannot run (no fastvideo, weights missing), it stops at once with the
reason and exit status 2, before loading anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from inference.engine import StepRequest, engine_class_or_reason
from inference.video.chunked import ChunkedVideoEngine
from inference.video.matrix_game import CONFIG as MATRIX_GAME
from inference.world.state import Action

RESULTS = Path(__file__).resolve().parent / "results" / "gpu_engine.json"


@dataclass(frozen=True)
class GpuBenchConfig:
    """Defaults of the GPU engine benchmark."""

    engine: str = "matrix-game-2"
    # One and two sessions: each Matrix-Game session holds its own copy of the weights, and a lent GPU has
    # minutes, not hours; pass more with --sessions on a longer lease.
    sessions: tuple[int, ...] = (1, 2)
    # Chunks per session and N: the first is drawn from the seed and warms the kernels, the others are measured.
    chunks: int = 5
    # Held keys, one per chunk, changed half-way through a chunk so that the latch, not the tick, decides.
    pattern: tuple[int, ...] = (
        int(Action.FORWARD),
        int(Action.FORWARD | Action.TURN_LEFT),
        0,
        int(Action.TURN_RIGHT),
        int(Action.STRAFE_LEFT),
    )
    spec_seed: int = 11


CONFIG = GpuBenchConfig()


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_engine", description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default=CONFIG.engine, help=f"a chunked video engine (default {CONFIG.engine})")
    parser.add_argument("--weights", help=f"the weights folder (default: ${MATRIX_GAME.weights_variable})")  # fmt: skip
    parser.add_argument("--sessions", type=int, nargs="+", default=list(CONFIG.sessions), help="the Ns to measure")
    parser.add_argument("--chunks", type=int, default=CONFIG.chunks, help="chunks per session for each N (>= 2)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where the flat JSON goes")
    arguments = parser.parse_args(argv)
    if any(count < 1 for count in arguments.sessions):
        parser.error("--sessions must all be at least 1")
    if arguments.chunks < 2:
        parser.error("--chunks must be at least 2: the first chunk only warms up")
    arguments.sessions = sorted(set(arguments.sessions))
    return arguments


def refusal(engine: str) -> str:
    """Why the benchmark cannot run here, as a sentence; empty when it can."""
    engine_class = engine_class_or_reason(engine)
    if isinstance(engine_class, str):
        return engine_class
    if not issubclass(engine_class, ChunkedVideoEngine):
        return f"engine {engine!r} is not a chunked video engine"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch: this benchmark runs only on a GPU machine"
    availability = engine_class.available()
    return "" if availability else f"engine {engine!r} cannot run: {availability.reason}"


def measure(engine: ChunkedVideoEngine, count: int, chunks: int) -> dict[str, float]:
    """Tick `count` fresh sessions at the engine's rate for `chunks` chunks; the figures for that N (the memory
    figures only where there is CUDA: the same loop runs a CPU engine in the tests)."""
    fps, chunk = engine.facts.frames_per_second, engine.chunk_frames
    cuda = torch.cuda.is_available()
    sessions = [engine.open_session({"seed": CONFIG.spec_seed + index, "size": 16}) for index in range(count)]
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    chunk_ms, latencies = [], []
    changed_at: float | None = None  # when the held keys last changed and no frame under them has come back yet
    started = time.perf_counter()
    measured_from, measured_ticks = started, 0
    for tick in range(chunks * chunk):
        due = started + tick / fps
        time.sleep(max(0.0, due - time.perf_counter()))  # paced as the host paces; no sleep when behind
        if tick == chunk:  # the first chunk, drawn from the seed, warms up and is not measured
            measured_from, measured_ticks = time.perf_counter(), 0
            # The pace starts again from here: ticks catching up on a slow warm-up would count as speed.
            started = measured_from - tick / fps
        # The keys change half-way through each chunk: the next chunk is the first that can show them.
        action = CONFIG.pattern[((tick + chunk // 2) // chunk) % len(CONFIG.pattern)]
        if tick >= chunk and tick % chunk == chunk - chunk // 2:
            changed_at = max(due, time.perf_counter())
        drawing = engine.queued(sessions[0]) == 0
        before = time.perf_counter()
        engine.step([StepRequest(session, action, []) for session in sessions])
        if cuda:
            torch.cuda.synchronize()
        after = time.perf_counter()
        if tick >= chunk:
            measured_ticks += 1
            if drawing:
                chunk_ms.append((after - before) * 1000)
                if changed_at is not None:
                    latencies.append((after - changed_at) * 1000)
                    changed_at = None
    elapsed = time.perf_counter() - measured_from
    for session in sessions:
        engine.close(session)
    figures = {
        f"fps_per_session_n{count}": measured_ticks / elapsed,
        f"ms_per_chunk_p50_n{count}": statistics.median(chunk_ms),
        f"input_to_frame_ms_p50_n{count}": statistics.median(latencies) if latencies else float("nan"),
        f"input_to_frame_ms_max_n{count}": max(latencies) if latencies else float("nan"),
    }
    if cuda:
        free, total = torch.cuda.mem_get_info()
        # This process's allocations; fastvideo runs its model in a worker process, whose memory shows only in
        # the device-wide figure.
        figures[f"peak_gpu_memory_allocated_mib_n{count}"] = torch.cuda.max_memory_allocated() / 2**20
        figures[f"gpu_memory_used_mib_n{count}"] = (total - free) / 2**20
    return figures


def sessions_kept_up(figures: dict[str, float], counts: list[int], fps: float) -> int:
    """The largest N whose sessions each got the engine's rate (2% off for the timer's jitter over a few seconds);
    0 when even one session fell behind."""
    return max((count for count in counts if figures[f"fps_per_session_n{count}"] >= fps * 0.98), default=0)


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    if arguments.weights:
        os.environ[MATRIX_GAME.weights_variable] = arguments.weights  # where the engine and its check look
    reason = refusal(arguments.engine)
    if reason:
        print(f"gpu_engine: {reason}", file=sys.stderr)
        return 2
    engine_class = engine_class_or_reason(arguments.engine)
    assert isinstance(engine_class, type)
    loading = time.perf_counter()
    # One engine for every N: each stream holds its own weights, loaded once for the largest N.
    engine = engine_class(device="cuda", streams=max(arguments.sessions))
    assert isinstance(engine, ChunkedVideoEngine)
    figures: dict[str, float | str] = {
        "gpu": torch.cuda.get_device_name(),
        "load_seconds": time.perf_counter() - loading,
    }
    fps = engine.facts.frames_per_second
    figures["engine_fps"] = fps
    measured: dict[str, float] = {}
    for count in arguments.sessions:
        these = measure(engine, count, arguments.chunks)
        print(", ".join(f"{name} {value:.1f}" for name, value in these.items()), flush=True)
        measured |= these
    kept_up = sessions_kept_up(measured, arguments.sessions, fps)
    figures |= measured
    figures["sessions_per_gpu"] = kept_up
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    print(f"sessions per GPU at {fps} fps: {kept_up}; written to {arguments.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
