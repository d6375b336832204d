"""Grant or revoke the moderator role, for operators (moderators can also be granted in the admin)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from accounts.services import moderator_grant, moderator_revoke


class Command(BaseCommand):
    help = "Make USERNAME a moderator (grant) or take the role away (revoke)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["grant", "revoke"])
        parser.add_argument("username")

    def handle(self, *args: Any, action: str, username: str, **_: Any) -> None:
        try:
            user = User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"no user called {username!r}") from None
        (moderator_grant if action == "grant" else moderator_revoke)(user=user)
        self.stdout.write(f"{username} is {'now' if action == 'grant' else 'no longer'} a moderator")
