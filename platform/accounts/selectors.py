"""Reads about people."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from accounts.models import ContentSettings, User
from accounts.roles import CREATE, MODERATE, PLAY, Role


def user_roles(*, user: AbstractBaseUser | AnonymousUser) -> list[str]:
    """The roles a person holds, judged by permission so superusers hold them all."""
    if not user.is_authenticated:
        return []
    held = {Role.PLAYER: PLAY, Role.CREATOR: CREATE, Role.MODERATOR: MODERATE}
    return [role.name.lower() for role, permission in held.items() if user.has_perm(permission)]


def sees_mature(*, user: User | AnonymousUser) -> bool:
    """Read from the person's content settings, which come with the signed-in person (accounts.backends) and are
    kept on the object once read, so a page asks for them once at most however many lists it shows."""
    if not user.is_authenticated:
        return False
    try:
        chosen = user.content_settings
    except ContentSettings.DoesNotExist:
        return False
    return chosen.show_mature and chosen.adult_confirmed_at is not None


def content_settings_of(*, user: User) -> ContentSettings:
    return ContentSettings.objects.filter(user=user).first() or ContentSettings(user=user)
