"""Serve the whole platform from one command: daphne for HTTP and WebSockets, plus an inference worker."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.preflight import services_reachable_or_exit

# SIGTERM or Ctrl-C stops the server within this; what is still running then is cut short. Daphne waits for every
# connection's coroutine to end, and the process for every thread: a database call waiting out SQLite's lock
# timeout (or a PostgreSQL lock, with no timeout) holds both, and a stop would wait for it.
STOP_DEADLINE_SECONDS = 8.0
STOPPED_LATE_EXIT_STATUS = 1


def exit_when_late(deadline_seconds: float) -> None:
    """From a daemon thread: end the process at once if it is still here after `deadline_seconds`."""
    time.sleep(deadline_seconds)
    sys.stderr.write(f"Worldloom stopped after {deadline_seconds:g} s, cutting short the work still running\n")
    sys.stderr.flush()
    os._exit(STOPPED_LATE_EXIT_STATUS)


class Command(BaseCommand):
    help = (
        "Serve Worldloom with daphne (HTTP and WebSocket). In the embedded mode an inference worker runs in "
        "this process too; in production run workers with `manage.py inference_worker` on their own machines."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--in-process-worker",
            action=argparse.BooleanOptionalAction,
            default=settings.EMBEDDED,
            help="run an inference worker inside this process (default: on in the embedded mode)",
        )
        parser.add_argument("--worker-slots", type=int, default=4)

    def handle(self, *args: Any, host: str, port: int, in_process_worker: bool, worker_slots: int, **_: Any) -> None:
        services_reachable_or_exit()
        # daphne installs Twisted's asyncio reactor when imported: import it before anything touches Twisted.
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server
        from twisted.internet import reactor

        from config.routing import application
        from inference.worker import BackgroundWorker, WorkerConfig
        from workers.services import worker_issue_token

        logging.getLogger("daphne").setLevel(logging.WARNING)
        url = f"http://{host}:{port}/"
        background_worker = None
        if in_process_worker:
            # A fresh token each start: the in-process worker is the only holder, and it never leaves memory.
            _, token = worker_issue_token(name=f"in-process-{socket.gethostname()}"[:100])
            background_worker = BackgroundWorker(
                WorkerConfig(
                    url=f"ws://{host}:{port}/ws/workers/",
                    token=token,
                    slots=worker_slots,
                    language_model=settings.WORKER_LANGUAGE_MODEL,
                    torch_threads=settings.WORKER_TORCH_THREADS,
                )
            )

        def on_ready() -> None:
            if background_worker is not None:
                background_worker.start()
            self.stdout.write(self.style.SUCCESS(f"Worldloom is running at {url}  (Ctrl-C stops it)"))

        server = Server(
            application=application,
            endpoints=build_endpoint_description_strings(host=host, port=port),
            ready_callable=on_ready,
            verbosity=0,
            signal_handlers=False,  # ours below: Twisted's stop has no deadline
        )
        stopping = threading.Event()

        def on_stop_signal(signal_number: int, frame: FrameType | None) -> None:
            if stopping.is_set():
                os._exit(STOPPED_LATE_EXIT_STATUS)  # a second Ctrl-C: now
            stopping.set()
            threading.Thread(target=exit_when_late, args=(STOP_DEADLINE_SECONDS,), daemon=True).start()
            reactor.callFromThread(server.stop)

        for signal_number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signal_number, on_stop_signal)
        try:
            server.run()
        finally:
            if background_worker is not None:
                background_worker.stop(timeout_seconds=2.0)
        if server.abort_start or not server.listening_addresses:
            raise CommandError(f"could not listen on {host}:{port}; is another server using that port?")
        self.stdout.write("Worldloom stopped.")
