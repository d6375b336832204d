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
    if not user.is_authenticated:
        return False
    return ContentSettings.objects.filter(user=user, show_mature=True, adult_confirmed_at__isnull=False).exists()


def content_settings_of(*, user: User) -> ContentSettings:
    return ContentSettings.objects.filter(user=user).first() or ContentSettings(user=user)
