"""How often people who are not signed in may search, shared by the search page and the search API."""

from __future__ import annotations

from typing import Any

from rest_framework.throttling import AnonRateThrottle


class AnonymousSearchThrottle(AnonRateThrottle):
    """Searches with words by people not signed in, per address (rate `anon_search` in the settings): ranking
    matches reads far more than a sorted page does, and a crowd of them slows the whole site. Browsing a
    sorted list without words is not counted."""

    scope = "anon_search"

    def allow_request(self, request: Any, view: Any) -> bool:
        if not request.GET.get("q", "").strip():
            return True
        return super().allow_request(request, view)


def search_wait_seconds(request: Any) -> int | None:
    """For a page (not an API) request: None while the person may search, else how long until they may."""
    throttle = AnonymousSearchThrottle()
    if throttle.allow_request(request, None):
        return None
    return max(1, round(throttle.wait() or 1))
