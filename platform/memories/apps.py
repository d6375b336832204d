from __future__ import annotations

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    """What characters remember of the players they talk to."""

    name = "memories"
