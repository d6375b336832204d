"""A task crosses a real broker (Redis) to a Celery worker process this test starts, and its result returns."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from common.tasks import worker_roundtrip

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def broker_app(redis_url: str) -> Iterator[Celery]:
    """A client app of its own on the Redis broker: the platform's app may have built connections already."""
    client = Celery("worldloom-test-client", broker=redis_url, backend=redis_url, set_as_current=False)
    yield client
    client.close()


@pytest.mark.slow
def test_a_task_runs_on_a_real_worker_process_and_its_result_comes_back(broker_app: Celery, redis_url: str) -> None:
    queue = f"test-{secrets.token_hex(4)}"  # a queue of its own, so no other worker can take the task
    environment = {"CELERY_BROKER_URL": redis_url, "CELERY_RESULT_BACKEND": redis_url}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "--queues",
            queue,
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT / "platform",
        env={**os.environ, **environment},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        nonce = secrets.token_hex(8)
        result = broker_app.send_task(worker_roundtrip.name, args=[nonce], queue=queue)
        answer = result.get(timeout=60)
        assert answer["nonce"] == nonce
        assert answer["host"]
    finally:
        worker.terminate()
        worker.wait(timeout=20)
