"""`make bench` keeps working: its quick mode runs and writes the keys it promises (figures are not judged)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import bench
from bench import __main__ as bench_main
from bench import load_speed
from tests.fixtures import ROOT


def quick_bench(
    name: str, *, timeout: int, environment: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`python -m bench --quick --only NAME`, which must succeed, and the figures it wrote."""
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", name],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, (result.stdout[-5000:], result.stderr[-5000:])
    return result, json.loads((ROOT / "bench" / "results" / f"{name}.json").read_text())


@pytest.mark.slow
def test_the_quick_benchmark_writes_flat_json_with_its_keys() -> None:
    result, figures = quick_bench("raycaster_bench", timeout=300)
    assert set(figures) == {
        "ms_per_frame_p50",
        "ms_per_frame_p95",
        "fps_per_session_batch_1",
        "fps_per_session_batch_4",
        "fps_per_session_batch_8",
        "fps_per_session_batch_16",
    }
    assert all(isinstance(value, float) and value > 0 for value in figures.values())
    assert "ms_per_frame_p50" in result.stdout


@pytest.mark.slow
def test_the_embedded_runtime_benchmark_runs_whatever_services_the_environment_names() -> None:
    # Services nobody listens on: the embedded measurement must not reach them (CI's environment names real
    # ones, and the benchmark once migrated them while its daphne served an empty SQLite file).
    unreachable = {"DATABASE_URL": "postgres://nobody@127.0.0.1:9/none", "REDIS_URL": "redis://127.0.0.1:9/0"}
    secrets = {"SECRET_KEY": "bench-test-secret-key-0123456789abcdef", "DEBUG": "false"}
    _, figures = quick_bench("runtime_bench", timeout=600, environment=os.environ | unreachable | secrets)
    assert figures["fps_sessions_1"] > 0 and figures["input_to_frame_p95_ms"] > 0


@pytest.mark.slow
def test_the_quick_load_benchmark_keeps_every_player_connected_and_leaves_no_group_behind() -> None:
    from django.conf import settings

    if "postgresql" not in settings.DATABASES["default"]["ENGINE"] or not settings.REDIS_URL:
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail("CI needs PostgreSQL and Redis for the load benchmark")
        pytest.skip("the load benchmark plays the production stack (PostgreSQL, Redis); .ci/run has them")
    _, figures = quick_bench("load_bench", timeout=600)
    assert {
        "players_per_core_p95_150ms",
        "daphne_cpu_ms_per_frame",
        "worker_cpu_ms_per_frame",
        "daphne_cpu_ms_per_input",
        "worker_cpu_ms_per_input",
        "ws_input_to_frame_p95_ms",
        "dropped_connections",
        "soak_rss_growth_pct",
        "soak_groups_left",
    } <= set(figures)
    # Speed is the benchmark's to report; a dropped player or a group left behind is a fault.
    assert figures["dropped_connections"] == 0
    assert figures["soak_groups_left"] == 0
    assert figures["ws_input_to_frame_p95_ms"] > 0
    # Every process kind did some work for the frames it delivered: the CPU figures come from the processes.
    assert figures["daphne_cpu_ms_per_frame"] > 0 and figures["worker_cpu_ms_per_frame"] > 0


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["--players", "0"], "--players takes 1..2000"),
        (["--players", "10", "--worlds", "11"], "--worlds takes 1..the number of players"),
        (["--daphnes", "0"], "--daphnes takes 1..32"),
        (["--workers", "33"], "--workers takes 1..32"),
        (["--seconds", "-1"], "--seconds must be more than 0"),
        (["--players", "many"], "invalid int value"),
    ],
)
def test_the_load_benchmark_refuses_a_nonsense_shape_and_says_what_is_wrong(
    arguments: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        load_speed.shape_arguments(arguments)
    assert exit_status.value.code == 2
    assert complaint in capsys.readouterr().err


def test_the_load_benchmark_takes_its_shape_from_the_command_line() -> None:
    plan = load_speed.shape_arguments(["--players", "60", "--worlds", "3", "--daphnes", "2", "--workers", "2"])
    assert plan.shape == load_speed.Shape(players=60, worlds=3, daphnes=2, workers=2)
    assert plan.shape.players_per_world == 20


def test_an_unknown_benchmark_name_is_refused_with_the_known_ones() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "nonsense"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "raycaster_bench" in result.stderr


def test_a_failing_benchmark_is_reported_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(quick: bool) -> dict[str, float]:
        raise RuntimeError("the platform did not start within 60 s")

    def skipped(quick: bool) -> dict[str, float]:
        raise bench.Skipped("needs DATABASE_URL")

    monkeypatch.setattr(
        bench_main, "BENCHMARKS", {"broken": broken, "skipped": skipped, "working": lambda quick: {"figure": 1.0}}
    )
    monkeypatch.setattr(bench_main, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match="failed: broken"):
        bench_main.main(["--quick"])
    printed = capsys.readouterr().out
    assert "broken  FAILED" in printed and "the platform did not start within 60 s" in printed
    assert "skipped  skipped: needs DATABASE_URL" in printed
    assert json.loads((tmp_path / "working.json").read_text()) == {"figure": 1.0}


@pytest.mark.slow
def test_the_quick_world_evaluation_writes_every_figure_the_issue_names() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--eval", "--quick", "--only", "world_eval"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    figures = json.loads((ROOT / "bench" / "results" / "world_eval.json").read_text())
    assert {
        "ae_psnr_db",
        "one_step_psnr_db",
        "copy_last_psnr_db",
        "mean_frame_psnr_db",
        "rollout64_psnr_db",
        "rollout1000_psnr_db",
        "revisit_turn_psnr_db",
        "revisit_outback_psnr_db",
        "controllability",
        "event_latency_frames",
        "event_persistence",
    } <= set(figures)
    # Quality is the evaluation's to report; the committed model must at least beat the average frame.
    assert figures["one_step_psnr_db"] > figures["mean_frame_psnr_db"]
    # The event test must tell events apart: another event's change passes for this one's far less often.
    assert figures["event_persistence_wrong_event"] < figures["event_persistence"]


@pytest.mark.slow
@pytest.mark.timeout(600)  # it loads the real models and answers both sets; a loaded CI machine needs the margin
def test_the_quick_narrative_evaluation_writes_both_parts_and_its_transcripts() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--eval", "--quick", "--only", "narrative_eval"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads((ROOT / "bench" / "results" / "narrative_eval.json").read_text())
    names = [
        "memory_use_rate",
        "false_recollection_rate",
        "reply_in_character_rate",
        "hook_branch_accuracy",
        "hook_fallback_accuracy",
        "prompt_event_accuracy",
        "choice_pair_pass_rate",
    ]
    assert {*names, *(f"{name}_tuning" for name in names)} <= set(figures)
    assert all(0.0 <= figures[name] <= 1.0 for name in names)
    transcripts = (ROOT / "bench" / "results" / "narrative_eval_transcripts.md").read_text()
    assert "## The untouched part" in transcripts and "## The tuning part" in transcripts


@pytest.mark.slow
def test_the_quick_video_benchmark_writes_each_codec_and_size_and_the_jpeg_it_matched() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "video_bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads((ROOT / "bench" / "results" / "video_bench.json").read_text())
    sizes = ("640x352", "1280x720")
    expected = {
        f"{figure}_{codec}_{size}"
        for figure in ("encode_ms_p50", "bytes_per_second", "psnr_db")
        for codec in ("h264", "vp8")
        for size in sizes
    }
    expected |= {
        f"{figure}_{size}"
        for figure in ("jpeg_quality", "bytes_per_second_jpeg", "psnr_db_jpeg", "jpeg_to_h264_bytes")
        for size in sizes
    }
    expected |= {f"render_ms_p50_raycaster_{size}" for size in sizes}
    assert set(figures) == expected
    assert all(isinstance(value, float) and value > 0 for value in figures.values())
    for size in sizes:  # the JPEG was matched to H.264's quality: within a decibel of it
        assert abs(figures[f"psnr_db_jpeg_{size}"] - figures[f"psnr_db_h264_{size}"]) < 1
    assert "encode_ms_p50_h264_640x352" in result.stdout


@pytest.mark.parametrize(("first", "capacity"), [(20, 37), (20, 20), (20, 3), (20, 0), (20, 700)])
def test_the_load_benchmark_s_search_finds_the_most_players_within_the_target_to_a_tenth(
    first: int, capacity: int
) -> None:
    tried = []

    def round_of(players: int) -> Any:
        tried.append(players)
        return SimpleNamespace(players=[None] * players, within_target=players <= capacity)

    best = load_speed.players_within_target(round_of(first), round_of, budget_seconds=60)
    assert best <= capacity and best >= capacity - max(1, capacity // 10)
    assert len(tried) < 20
