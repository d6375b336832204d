"""Template context every page needs to draw the navigation bar."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounts.selectors import user_roles


def roles(request: HttpRequest) -> dict[str, Any]:
    held = user_roles(user=request.user)
    return {"user_roles": held, "is_moderator": "moderator" in held, "is_creator": "creator" in held}
