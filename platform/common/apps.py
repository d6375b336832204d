from __future__ import annotations

from django.apps import AppConfig


class CommonConfig(AppConfig):
    """Helpers shared across apps: configuration, health, the serve command."""

    name = "common"
