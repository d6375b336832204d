"""Load the demo content (its people, and the worlds with their characters and stories) and print the log-ins."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.demo import DEMO_PASSWORD, demo_people_ensure
from accounts.models import User
from shell.demo import demo_worlds_ensure


class Command(BaseCommand):
    help = "Create the demo accounts and content where missing (idempotent) and print the demo log-ins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--allow-production",
            action="store_true",
            help="load even outside the embedded mode (the demo password is public)",
        )

    def handle(self, *args: Any, allow_production: bool, **_: Any) -> None:
        if not settings.EMBEDDED and not allow_production:
            raise CommandError("refusing to create accounts with a public password outside the embedded mode")
        people = demo_people_ensure()
        creator = User.objects.get(username=next(person.username for person in people if person.role == "creator"))
        worlds = demo_worlds_ensure(creator=creator)
        self.stdout.write(f"Demo worlds: {', '.join(f'{world.title} ({world.category})' for world in worlds)}")
        self.stdout.write(f"Demo log-ins (password for all: {DEMO_PASSWORD}):")
        for person in people:
            self.stdout.write(f"  {person.role:<10} {person.username}")
