from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """People and their roles: players, creators, moderators."""

    name = "accounts"

    def ready(self) -> None:
        from accounts import signals  # noqa: F401 - connects the receivers
