"""Run the registered benchmarks (or, with --eval, evaluations), print a table, write flat JSON results."""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from bench import (
    Skipped,
    engine_speed,
    gallery_speed,
    load_speed,
    narrative_quality,
    narrative_speed,
    player_fps,
    runtime_speed,
    video_codec,
    world_quality,
    world_speed,
)

Measure = Callable[[bool], dict[str, float]]

BENCHMARKS: dict[str, Measure] = {
    "raycaster_bench": engine_speed.run,
    "world_bench": world_speed.run,
    "runtime_bench": runtime_speed.run,
    "gallery_bench": gallery_speed.run,
    "narrative_bench": narrative_speed.run,
    "load_bench": load_speed.run,
    "player_fps": player_fps.run,
    "video_bench": video_codec.run,
}
EVALUATIONS: dict[str, Measure] = {
    "world_eval": world_quality.run,
    "narrative_eval": narrative_quality.run,
}

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eval", action="store_true", help="run the quality evaluations instead of benchmarks")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for CI")
    parser.add_argument("--only", nargs="*", help="names to run (default: all)")
    arguments = parser.parse_args(argv)
    registry = EVALUATIONS if arguments.eval else BENCHMARKS
    chosen = arguments.only or list(registry)
    unknown = set(chosen) - set(registry)
    if unknown:
        parser.error(f"unknown: {', '.join(sorted(unknown))}; known: {', '.join(sorted(registry)) or 'none'}")
    if not chosen:
        print("nothing registered yet")
        return
    RESULTS.mkdir(exist_ok=True)
    failed = []
    for name in chosen:
        started = time.perf_counter()
        try:
            figures = registry[name](arguments.quick)
        except Skipped as reason:
            print(f"{name}  skipped: {reason}")
            continue
        except Exception:  # one benchmark's failure must not hide the figures of the others
            print(f"{name}  FAILED:\n{traceback.format_exc()}")
            failed.append(name)
            continue
        (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
        print(table(name, figures, time.perf_counter() - started))
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


def table(name: str, figures: dict[str, float], seconds: float) -> str:
    width = max(len(key) for key in figures)
    rows = [f"{key:<{width}}  {value:>10.2f}" for key, value in figures.items()]
    rule = "-" * (width + 12)
    return "\n".join([f"{name}  ({seconds:.1f} s, bench/results/{name}.json)", rule, *rows, rule])


if __name__ == "__main__":
    main()
