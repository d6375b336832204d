"""Moderation's answers to the events of the apps below it (connected in ModerationConfig.ready)."""

from __future__ import annotations

from typing import Any

from moderation.services import submission_open
from worlds.models import WorldVersion


def published_version_submitted(sender: Any, *, version: WorldVersion, **_: Any) -> None:
    """Every published version waits for review."""
    submission_open(version=version)
