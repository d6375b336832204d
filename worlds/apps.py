from __future__ import annotations

from django.apps import AppConfig


class WorldsConfig(AppConfig):
    """Worlds, characters and hooks as creators author them, and the studio they author them in."""

    name = "worlds"
