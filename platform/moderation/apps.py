from __future__ import annotations

from django.apps import AppConfig


class ModerationConfig(AppConfig):
    """Review of published work and of what players report."""

    name = "moderation"

    def ready(self) -> None:
        from moderation.subscriptions import published_version_submitted
        from worlds.events import version_published

        version_published.connect(published_version_submitted, dispatch_uid="moderation.published_version_submitted")
