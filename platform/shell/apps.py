from __future__ import annotations

from django.apps import AppConfig


class ShellConfig(AppConfig):
    """The site shell: the commands that start the whole platform and load its demo, and the health check."""

    name = "shell"
