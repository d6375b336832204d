from __future__ import annotations

from django.apps import AppConfig


class StoriesConfig(AppConfig):
    """Interactive stories (beats, choices, endings); later play sessions, their logs and memories."""

    name = "stories"
