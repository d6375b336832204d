"""Fixtures shared by every test: real platform processes, and the report of which services the run uses."""

from __future__ import annotations

pytest_plugins = ("tests.fixtures",)
