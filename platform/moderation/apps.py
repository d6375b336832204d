from __future__ import annotations

from django.apps import AppConfig


class ModerationConfig(AppConfig):
    """Review of published work and of what players report."""

    name = "moderation"
