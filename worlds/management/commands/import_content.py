"""Import character cards, lorebooks, Twine stories and world cartridges from files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import User
from worlds.imports import content_import
from worlds.models import World


class Command(BaseCommand):
    help = (
        'Import files (format judged from the content) for --owner and print {"created": [...]} as JSON. '
        "All files are imported or none: a bad file stops with one line naming it and what is wrong."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--owner", required=True, help="username of the creator who will own the content")
        parser.add_argument("--world", type=int, help="id of one of the owner's worlds to attach the content to")

    def handle(self, *args: Any, paths: list[Path], owner: str, world: int | None, **_: Any) -> None:
        try:
            creator = User.objects.get(username=owner)
        except User.DoesNotExist:
            raise CommandError(f"no user called {owner!r}") from None
        target = None
        if world is not None:
            target = World.objects.filter(pk=world, owner=creator).first()
            if target is None:
                raise CommandError(f"{owner} has no world with id {world}")
        created = []
        with transaction.atomic():
            for path in paths:
                try:
                    data = path.read_bytes()
                except OSError as error:
                    raise CommandError(f"{path}: {error.strerror}") from None
                try:
                    created += content_import(data=data, owner=creator, world=target)
                except ValidationError as error:
                    raise CommandError(f"{path}: {' '.join(error.messages)}") from None
        self.stdout.write(json.dumps({"created": created}))
