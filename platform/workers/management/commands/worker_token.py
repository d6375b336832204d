"""Issue (or rotate) the token an inference worker authenticates with."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workers.services import worker_issue_token


class Command(BaseCommand):
    help = "Create the inference worker NAME, or give it a new token, and print the token once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="a slug naming the worker, e.g. gpu-box-3")

    def handle(self, *args: Any, name: str, **options: Any) -> None:
        _, token = worker_issue_token(name=name)
        self.stdout.write(token)
