"""Bad configuration stops a process at start with one line naming the variable, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import variables_read_by_settings

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/worldloom",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "SECRET_KEY": "k3#Vq8!zT0pL$w2R@x9Nc5&bH7mY4uJ1eF6gD_sA+oI-rK=tQ-production-like-key",
    "ALLOWED_HOSTS": "worldloom.example",
    "DEBUG": "false",
}


def run(arguments: list[str], **variables: str) -> subprocess.CompletedProcess[str]:
    # Only what the test names: nothing inherited (HTTPS=false from `make test`, say) may colour the result.
    settings_variables = variables_read_by_settings()
    environment = {key: value for key, value in os.environ.items() if key not in settings_variables}
    environment.update(variables)
    return subprocess.run(
        arguments, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False
    )


def manage(*arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "manage.py", *arguments], **variables)


def assert_one_clear_line(result: subprocess.CompletedProcess[str], variable: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert variable in lines[0]
    assert lines[0].startswith("worldloom: configuration error:")


@pytest.mark.parametrize(
    "url", ["garbage", "postgres://postgres@127.0.0.1:notaport/worldloom", "mysql://root@127.0.0.1/x", "postgres://"]
)
def test_a_malformed_database_url_is_named_in_one_line(url: str) -> None:
    assert_one_clear_line(manage("check", DATABASE_URL=url, SECRET_KEY="x"), "DATABASE_URL")


def test_a_malformed_redis_url_is_named_in_one_line() -> None:
    assert_one_clear_line(manage("check", REDIS_URL="http://127.0.0.1:6379"), "REDIS_URL")


def test_the_password_in_a_malformed_url_is_not_printed() -> None:
    result = manage("check", DATABASE_URL="mysql://root:hunter2@127.0.0.1/x", SECRET_KEY="x")
    assert "hunter2" not in result.stderr
    assert "***" in result.stderr


@pytest.mark.slow
def test_an_unreachable_redis_stops_the_server_at_start() -> None:
    result = manage("serve", "--port", "0", REDIS_URL="redis://127.0.0.1:1/0")
    assert_one_clear_line(result, "REDIS_URL")
    assert "unreachable" in result.stderr


@pytest.mark.slow
def test_an_unreachable_redis_stops_daphne_at_start() -> None:
    daphne = str(Path(sys.executable).with_name("daphne"))
    result = run([daphne, "--port", "0", "config.asgi:application"], REDIS_URL="redis://127.0.0.1:1/0")
    assert_one_clear_line(result, "REDIS_URL")


@pytest.mark.slow
def test_an_unreachable_database_stops_the_server_at_start() -> None:
    result = manage(
        "serve", "--port", "0", DATABASE_URL="postgres://postgres@127.0.0.1:1/worldloom", SECRET_KEY="x" * 50
    )
    assert_one_clear_line(result, "DATABASE_URL")


def test_production_without_a_secret_key_refuses_to_start() -> None:
    assert_one_clear_line(manage("check", DATABASE_URL=PRODUCTION["DATABASE_URL"]), "SECRET_KEY")


def test_the_deploy_check_is_clean_with_production_settings() -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stdout + result.stderr
