"""Issue (or rotate) the token an inference worker authenticates with."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workers.services import TOKEN_LIFETIME, worker_issue_token


class Command(BaseCommand):
    help = "Create the inference worker NAME, or give it a new token, and print the token once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="a slug naming the worker, e.g. gpu-box-3")
        parser.add_argument(
            "--days",
            type=int,
            default=TOKEN_LIFETIME.days,
            help=f"how long the token is accepted at the handshake (default {TOKEN_LIFETIME.days})",
        )

    def handle(self, *args: Any, name: str, days: int, **options: Any) -> None:
        _, token = worker_issue_token(name=name, lifetime=timedelta(days=days))
        self.stdout.write(token)
