"""The embedded mode (`make run`: no broker named) runs each publish's checks inline, without reaching for one.

It is run as `make run` runs it, in a process of its own: the settings decide the broker when they are read, so
a test process configured for Redis (as CI's is) cannot stand in for it.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from moderation.models import CheckKind
from tests.fixtures import ROOT
from tests.test_serve_stops import embedded_environment


def manage(data_dir: Path, *arguments: str) -> str:
    finished = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=embedded_environment(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return finished.stdout + finished.stderr


@pytest.mark.slow
def test_loading_the_demo_publishes_each_world_with_its_checks_run_inline_and_no_broker_warning(
    tmp_path: Path,
) -> None:
    logged = manage(tmp_path, "migrate", "--no-input") + manage(tmp_path, "load_demo")
    with sqlite3.connect(tmp_path / "worldloom.sqlite3") as database:
        (versions,) = database.execute("SELECT COUNT(*) FROM worlds_worldversion").fetchone()
        (checks,) = database.execute("SELECT COUNT(*) FROM moderation_checkresult").fetchone()
    assert versions > 0
    assert checks == versions * len(CheckKind)  # every check of every version ran, in the process itself
    assert "kombu" not in logged
    assert "No hostname was supplied" not in logged
