"""Speed and quality measurements: `make bench` and `make eval` (`BENCH_ARGS=--quick` for CI).

Each benchmark or evaluation is a function `run(quick: bool) -> dict[str, float]`, registered below by the
name of the JSON file it writes to `bench/results/<name>.json` (flat, as the issues name the keys). Figures
are measured here, never in timed tests.
"""


class Skipped(Exception):
    """A measurement that cannot run here (its service is missing); the runner says why and goes on."""
