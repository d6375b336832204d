"""Writes about inference workers: issuing tokens, and the life of a worker's connection."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from workers.models import WorkerNode

# Marks worker tokens so that a leaked one is recognisable in logs and secret scanners.
TOKEN_PREFIX = "wlw_"  # noqa: S105 - a prefix, not a secret
# Long enough that operators rotate on a calendar rather than in a hurry; short enough that a token copied
# into a forgotten config file stops working on its own. `manage.py worker_token --days` chooses another.
TOKEN_LIFETIME = timedelta(days=90)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def worker_issue_token(*, name: str, lifetime: timedelta = TOKEN_LIFETIME) -> tuple[WorkerNode, str]:
    """Create the worker `name`, or give it a new token valid for `lifetime`; the old token stops working at once."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    worker, _ = WorkerNode.objects.update_or_create(
        name=name, defaults={"token_hash": token_hash(token), "token_expires_at": timezone.now() + lifetime}
    )
    return worker, token


def worker_authenticate(*, token: str) -> WorkerNode | None:
    """The worker an unexpired token belongs to, or None. Tokens are long and random, so a hash lookup is safe."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    return WorkerNode.objects.filter(token_hash=token_hash(token), token_expires_at__gt=timezone.now()).first()


@transaction.atomic
def worker_connect(*, worker: WorkerNode, channel_name: str) -> None:
    now = timezone.now()
    WorkerNode.objects.filter(pk=worker.pk).update(
        channel_name=channel_name, connected_at=now, last_heartbeat_at=now, disconnected_at=None
    )


@transaction.atomic
def worker_announce(
    *,
    worker: WorkerNode,
    engines: list[str],
    slots: int,
    free_slots: int,
    device: str,
    engine_facts: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Record what a worker said it can run, as it says so in its hello."""
    WorkerNode.objects.filter(pk=worker.pk).update(
        engines=engines,
        engine_facts=engine_facts or {},
        slots=slots,
        free_slots=free_slots,
        device=device,
        last_heartbeat_at=timezone.now(),
    )


@transaction.atomic
def worker_heartbeat(*, worker: WorkerNode, free_slots: int) -> None:
    WorkerNode.objects.filter(pk=worker.pk).update(free_slots=free_slots, last_heartbeat_at=timezone.now())


@transaction.atomic
def worker_disconnect(*, worker: WorkerNode, channel_name: str) -> None:
    """Mark the worker gone, unless it has already reconnected on another channel."""
    WorkerNode.objects.filter(pk=worker.pk, channel_name=channel_name).update(
        disconnected_at=timezone.now(), free_slots=0
    )
