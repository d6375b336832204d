"""Fixtures shared by the format tests: the real files in tests/data/formats."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "data" / "formats"


@pytest.fixture
def fixture_bytes() -> Callable[[str], bytes]:
    """Read a fixture file by name."""
    return lambda name: (FIXTURES / name).read_bytes()
