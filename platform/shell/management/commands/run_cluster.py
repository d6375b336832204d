"""Run Worldloom as several processes on this machine: daphnes behind HAProxy, inference workers, Celery."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.preflight import services_reachable_or_exit
from shell.cluster import Cluster, ClusterShape


class Command(BaseCommand):
    help = (
        "Start N daphne processes behind HAProxy, M inference workers and a Celery worker on PostgreSQL and Redis "
        "(DATABASE_URL, REDIS_URL), print the URL, and stop them all on Ctrl-C or SIGTERM."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--daphnes", type=int, default=2)
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument("--port", type=int, default=8000, help="the balancer's port")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--worker-slots", type=int, default=4)
        parser.add_argument(
            "--state-folder", type=Path, default=Path(settings.DATA_DIR) / "cluster",
            help="where the balancer's configuration and cluster.json (each process's role, pid and port) go",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.EMBEDDED or not settings.REDIS_URL:
            raise CommandError(
                "a cluster shares PostgreSQL and Redis between its processes: set DATABASE_URL and REDIS_URL"
            )
        if not (1 <= options["daphnes"] <= 32 and 1 <= options["workers"] <= 32):
            raise CommandError("--daphnes and --workers take 1..32")
        services_reachable_or_exit()
        shape = ClusterShape(
            daphnes=options["daphnes"],
            workers=options["workers"],
            port=options["port"],
            worker_slots=options["worker_slots"],
            host=options["host"],
        )
        cluster = Cluster(shape, options["state_folder"])

        def on_stop_signal(signal_number: int, frame: FrameType | None) -> None:
            cluster.stopping.set()

        for signal_number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signal_number, on_stop_signal)
        try:
            state = cluster.start()
            self.stdout.write(
                self.style.SUCCESS(f"Worldloom is running at {state.url}  (Ctrl-C stops it)"), ending="\n"
            )
            self.stdout.flush()
            cluster.stopping.wait()
        except RuntimeError as error:
            raise CommandError(str(error)) from None
        finally:
            cluster.stop()
        self.stdout.write("Worldloom stopped.")
