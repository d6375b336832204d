from __future__ import annotations

from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """The fleet of inference workers that connect to the platform and run the engines."""

    name = "workers"
