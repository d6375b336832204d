"""Run an inference worker process; the same as `python -m inference.worker`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inference import worker


class Command(BaseCommand):
    help = "Connect an inference worker to the platform's /ws/workers/ endpoint and serve sessions."

    def add_arguments(self, parser: CommandParser) -> None:
        worker.add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        worker.run_until_interrupted(
            worker.WorkerConfig(**{k: options[k] for k in ("url", "token", "slots", "device")})
        )
