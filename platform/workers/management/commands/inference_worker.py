"""Run an inference worker process; the same as `python -m inference.worker`.

It exits with status 1 when its engine thread stops answering (see inference.worker), for its supervisor to
start it again.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inference import worker


class Command(BaseCommand):
    help = "Connect an inference worker to the platform's /ws/workers/ endpoint and serve sessions."

    def add_arguments(self, parser: CommandParser) -> None:
        worker.add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        # The same options as `python -m inference.worker`, from the worker's own parser, so none goes missing.
        worker.run_until_interrupted(worker.config_from_arguments(argparse.Namespace(**options)))
