"""The three roles as groups, each granting one permission of accounts.User.

Every person who signs up is a player and a creator; moderators are granted by an operator or another
moderator. Checks use the permissions (`user.has_perm("accounts.moderate")`), never group names.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    PLAYER = "Players"
    CREATOR = "Creators"
    MODERATOR = "Moderators"


ROLE_PERMISSIONS: dict[Role, str] = {
    Role.PLAYER: "play",
    Role.CREATOR: "create",
    Role.MODERATOR: "moderate",
}
SIGN_UP_ROLES = (Role.PLAYER, Role.CREATOR)

PLAY = "accounts.play"
CREATE = "accounts.create"
MODERATE = "accounts.moderate"
