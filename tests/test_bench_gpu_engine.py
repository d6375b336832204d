"""The GPU engine benchmark on a machine without a GPU: its arguments, and its refusal before loading anything."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from bench import gpu_engine
from inference.tests.test_video_chunked import CHUNK, TinyChunkedEngine
from tests.fixtures import ROOT


def test_its_arguments_default_to_matrix_game_and_sort_the_session_counts() -> None:
    arguments = gpu_engine.parse_arguments(["--sessions", "4", "1", "2", "1", "--chunks", "3", "--weights", "/w"])
    assert (arguments.engine, arguments.sessions, arguments.chunks, arguments.weights) == (
        "matrix-game-2",
        [1, 2, 4],
        3,
        "/w",
    )
    defaults = gpu_engine.parse_arguments([])
    assert defaults.sessions == [1, 2] and defaults.output == ROOT / "bench" / "results" / "gpu_engine.json"


@pytest.mark.parametrize("argv", [["--sessions", "0"], ["--chunks", "1"], ["--sessions"]])
def test_it_refuses_arguments_it_cannot_measure(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        gpu_engine.parse_arguments(argv)
    assert stopped.value.code == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_without_a_gpu_it_stops_at_once_with_the_reason_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "gpu_engine.json"
    finished = subprocess.run(
        [sys.executable, "-m", "bench.gpu_engine", "--output", str(output), "--weights", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 2
    assert "no CUDA GPU is visible to torch" in finished.stderr
    assert not output.exists()


def test_an_engine_that_is_not_installed_or_not_chunked_is_named_in_the_refusal() -> None:
    assert gpu_engine.refusal("no-such-engine") == "no engine 'no-such-engine' is installed"
    assert gpu_engine.refusal("raycaster") == "engine 'raycaster' is not a chunked video engine"


def test_its_loop_paces_the_sessions_and_times_chunks_and_key_changes_on_a_cpu_engine() -> None:
    figures = gpu_engine.measure(TinyChunkedEngine(), count=2, chunks=3)  # 12 ticks at 20 fps: about half a second
    assert figures["fps_per_session_n2"] == pytest.approx(20, rel=0.15)
    assert figures["ms_per_chunk_p50_n2"] > 0
    # A key changed half-way through a chunk shows when the next chunk comes: half a chunk later, at 20 fps.
    half_chunk_ms = CHUNK // 2 * 1000 / 20
    assert half_chunk_ms * 0.8 <= figures["input_to_frame_ms_p50_n2"] <= half_chunk_ms * 1.8
    if not torch.cuda.is_available():
        assert not [name for name in figures if "memory" in name]


class SlowFirstChunkEngine(TinyChunkedEngine):
    """Its first chunk takes as long as a GPU's first chunk can (compiling, allocating): a second."""

    def generate(self, contexts: list[Any], controls: list[Any], prompts: list[str]) -> list[Any]:
        if not getattr(self, "warmed_up", False):
            self.warmed_up = True
            time.sleep(1.0)
        return super().generate(contexts, controls, prompts)


def test_a_slow_warm_up_is_not_counted_as_speed_afterwards() -> None:
    figures = gpu_engine.measure(SlowFirstChunkEngine(), count=2, chunks=3)
    assert figures["fps_per_session_n2"] == pytest.approx(20, rel=0.15)


def test_sessions_per_gpu_is_the_largest_count_that_kept_the_rate() -> None:
    figures = {"fps_per_session_n1": 24.1, "fps_per_session_n2": 23.6, "fps_per_session_n4": 17.0}
    assert gpu_engine.sessions_kept_up(figures, [1, 2, 4], 24) == 2
    assert gpu_engine.sessions_kept_up({"fps_per_session_n1": 12.0}, [1], 24) == 0
