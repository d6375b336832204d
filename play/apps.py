from __future__ import annotations

from django.apps import AppConfig


class PlayConfig(AppConfig):
    """Play sessions: starting, queueing and resuming them, the browser's socket and the worker's session messages."""

    name = "play"

    def ready(self) -> None:
        from gallery.events import world_page_shown
        from moderation.events import world_taken_down
        from play.subscriptions import live_world_players_shown, taken_down_world_sessions_end

        world_taken_down.connect(taken_down_world_sessions_end, dispatch_uid="play.taken_down_world_sessions_end")
        world_page_shown.connect(live_world_players_shown, dispatch_uid="play.live_world_players_shown")
