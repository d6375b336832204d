from __future__ import annotations

from django.apps import AppConfig


class PlayConfig(AppConfig):
    """Play sessions: starting, queueing and resuming them, the browser's socket and the worker's session messages."""

    name = "play"
