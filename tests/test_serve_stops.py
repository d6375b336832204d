"""`manage.py serve` stops within 10 s of SIGTERM or Ctrl-C, whatever its threads are doing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.fixtures import ROOT, free_port
from tests.test_docs import variables_read_by_settings

STOP_SECONDS = 10.0


def embedded_environment(data_dir: Path) -> dict[str, str]:
    """The embedded mode (SQLite in `data_dir`, no Redis), as `make run` serves it, with nothing inherited."""
    settings_variables = variables_read_by_settings()
    environment = {key: value for key, value in os.environ.items() if key not in settings_variables}
    environment.update(
        WORLDLOOM_DATA_DIR=str(data_dir),
        WORLDLOOM_LANGUAGE_MODEL="none",
        PYTHONUNBUFFERED="1",
        WORKER_HEARTBEAT_SECONDS="1",
    )
    return environment


@pytest.fixture(scope="module")
def migrated_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("serve-stops")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=ROOT,
        check=True,
        timeout=300,
        env=embedded_environment(data_dir),
        capture_output=True,
    )
    return data_dir


@pytest.fixture
def served(migrated_data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """`manage.py serve` on a free port, once its in-process worker has connected."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=embedded_environment(migrated_data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()[0]
            try:
                if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()["status"] == "ok":
                    break
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.3)
        else:
            raise AssertionError("serve did not start with its worker within 120 s")
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def seconds_to_stop(process: subprocess.Popen[str], signal_number: int) -> float:
    started = time.monotonic()
    process.send_signal(signal_number)
    try:
        process.wait(timeout=STOP_SECONDS * 3)
    except subprocess.TimeoutExpired:
        pass
    return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_stops_within_ten_seconds_of_a_signal(
    served: subprocess.Popen[str], signal_number: signal.Signals
) -> None:
    assert seconds_to_stop(served, signal_number) < STOP_SECONDS
    assert served.returncode == 0  # a clean stop, not the deadline's
    logged = served.communicate()[0]
    # Every task a connection started ends with it: none is left pending for the closing loop to destroy.
    assert "Worldloom stopped." in logged
    assert "Task was destroyed" not in logged, logged


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_stops_within_ten_seconds_while_a_database_thread_is_caught_mid_call(
    served: subprocess.Popen[str], migrated_data_dir: Path, signal_number: signal.Signals
) -> None:
    # Another process holds the write lock: the worker's next heartbeat waits 20 s for it in a database thread.
    holder = sqlite3.connect(migrated_data_dir / "worldloom.sqlite3", timeout=1)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        time.sleep(2.5)
        assert seconds_to_stop(served, signal_number) < STOP_SECONDS
    finally:
        holder.rollback()
        holder.close()
    assert served.returncode is not None
