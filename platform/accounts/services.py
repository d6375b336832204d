"""Writes about people: creating accounts, granting roles, ending their open sockets."""

from __future__ import annotations

from typing import Any

from allauth.account.models import EmailAddress
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.utils import timezone

from accounts.models import ContentSettings, User
from accounts.roles import ROLE_PERMISSIONS, SIGN_UP_ROLES, Role


@transaction.atomic
def roles_ensure() -> dict[Role, Group]:
    """The role groups with their permissions, created where missing (idempotent)."""
    groups = {}
    for role, codename in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role.value)
        group.permissions.add(Permission.objects.get(content_type__app_label="accounts", codename=codename))
        groups[role] = group
    return groups


@transaction.atomic
def user_roles_on_sign_up(*, user: User) -> None:
    """Give a newly signed-up person the roles everyone has: they can play and create."""
    groups = roles_ensure()
    user.groups.add(*(groups[role] for role in SIGN_UP_ROLES))


@transaction.atomic
def user_create(*, username: str, email: str, password: str, moderator: bool = False) -> User:
    """Create an account as sign-up would, optionally a moderator (for operators and demo content). The operator
    vouches for the e-mail address, so it counts as verified: sign-in asks for no confirmation."""
    user = User.objects.create_user(username=username, email=email, password=password)
    if email:  # an account made without an address (bench players, scripts) has none to vouch for
        EmailAddress.objects.create(user=user, email=email, primary=True, verified=True)
    user_roles_on_sign_up(user=user)
    if moderator:
        moderator_grant(user=user)
    return user


@transaction.atomic
def moderator_grant(*, user: User) -> None:
    user.groups.add(roles_ensure()[Role.MODERATOR])


@transaction.atomic
def moderator_revoke(*, user: User) -> None:
    user.groups.remove(roles_ensure()[Role.MODERATOR])


def user_group(user_id: Any) -> str:
    """The channel-layer group every play socket of this person belongs to."""
    return f"user.{user_id}"


def user_sockets_close(*, user_id: Any, reason: str) -> None:
    """Close every play socket of this person, on every daphne process, once the current transaction commits.

    A socket authenticates once, at its handshake; without this a signed-out or suspended person would keep
    playing (and steering shared Live worlds) for as long as the socket stays open.
    """
    message = {"type": "user.sockets_close", "reason": reason}
    transaction.on_commit(lambda: async_to_sync(get_channel_layer().group_send)(user_group(user_id), message))


@transaction.atomic
def content_settings_update(*, user: User, show_mature: bool, adult_confirmed: bool) -> ContentSettings:
    """Mature works show only to players who opt in and confirm they are adults; opting out clears both."""
    chosen, _ = ContentSettings.objects.select_for_update().get_or_create(user=user)
    chosen.show_mature = show_mature and adult_confirmed
    if chosen.show_mature and chosen.adult_confirmed_at is None:
        chosen.adult_confirmed_at = timezone.now()
    if not chosen.show_mature:
        chosen.adult_confirmed_at = None
    chosen.save()
    user.content_settings = chosen  # what this request reads next (accounts.selectors.sees_mature) is the new choice
    return chosen
