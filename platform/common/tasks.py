"""Celery tasks that belong to no single app."""

from __future__ import annotations

import socket

from celery import shared_task


@shared_task
def worker_roundtrip(nonce: str) -> dict[str, str]:
    """Echo `nonce` with the answering worker's host: proves a task crossed the broker and came back."""
    return {"nonce": nonce, "host": socket.gethostname()}
