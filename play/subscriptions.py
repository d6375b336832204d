"""Play's answers to the events of the apps below it (connected in PlayConfig.ready)."""

from __future__ import annotations

from typing import Any

from accounts.models import User
from gallery.events import PageSection
from gallery.models import Listing
from play.selectors import live_session_now
from play.services import sessions_end_for_world
from worlds.categories import Category
from worlds.models import World


def taken_down_world_sessions_end(sender: Any, *, world: World, reason: str, **_: Any) -> int:
    """A world taken down stops being played: its sessions end, and their players see the reason."""
    return sessions_end_for_world(world_id=world.pk, reason=reason)


def live_world_players_shown(sender: Any, *, listing: Listing, user: User, **_: Any) -> PageSection | None:
    """A Live world's gallery page shows who is in it now, and lets a signed-in person watch."""
    if listing.category != Category.LIVE:
        return None
    session = live_session_now(world=listing.world)
    if session is None:
        return None
    return PageSection("play/_live_now.html", {"live_session": session, "can_watch": user.is_authenticated})
