"""The platform as `make run` serves it: a real daphne process, real WebSockets, real worker processes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from tests.fixtures import ROOT, LivePlatform, platform_environment, wait_until
from workers.services import worker_issue_token

pytestmark = pytest.mark.slow


def test_the_served_platform_answers_health_with_its_in_process_worker(live_platform: LivePlatform) -> None:
    health = wait_until(lambda: (h := live_platform.health())["inference_workers"]["connected"] == 1 and h)
    assert health["status"] == "ok"
    assert "raycaster" in health["inference_workers"]["engines"]
    page = requests.get(f"{live_platform.url}/", timeout=10)
    assert page.status_code == 200
    stylesheet = requests.get(f"{live_platform.url}/static/css/worldloom.css", timeout=10)
    assert stylesheet.status_code == 200
    assert "prefers-color-scheme: dark" in stylesheet.text


def test_a_separate_worker_process_connects_with_its_token(live_platform: LivePlatform) -> None:
    _, token = worker_issue_token(name="remote-box")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inference.worker",
            "--url",
            f"{live_platform.ws_url}/ws/workers/",
            "--token",
            token,
            "--slots",
            "3",
        ],
        cwd=ROOT,
        env=platform_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Connected counts at the handshake, slots at the worker's hello just after it: wait for both.
        workers = wait_until(
            lambda: (w := live_platform.health()["inference_workers"])["connected"] == 2 and w["slots"] == 7 and w,
            timeout_seconds=30,
        )
        assert workers["slots"] == 4 + 3
    finally:
        worker.terminate()
        worker.wait(timeout=10)
    wait_until(lambda: live_platform.health()["inference_workers"]["connected"] == 1)


def test_a_worker_with_a_forged_token_stops_with_one_clear_line(live_platform: LivePlatform) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "inference_worker",
            "--url",
            f"{live_platform.ws_url}/ws/workers/",
            "--token",
            "wlw_forged",
        ],
        cwd=ROOT,
        env=platform_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "refused this worker's token" in result.stderr
    assert "Traceback" not in result.stderr
