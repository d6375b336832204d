"""Celery tasks: each automated check of a submitted version runs as a task of its own."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from moderation.models import CheckKind
from moderation.services import version_check
from worlds.models import WorldVersion


# Checks are idempotent (one row per version and kind), so a task redelivered after a lost worker is safe.
# A lost database connection or an unreadable image file is retried a few times with backoff.
@shared_task(autoretry_for=(OperationalError, OSError), retry_backoff=True, max_retries=3)
def version_check_task(version_id: int, kind: str) -> str:
    version = WorldVersion.objects.select_related("world").filter(pk=version_id).first()
    if version is None:  # the world was deleted while the check waited in the queue
        return "gone"
    return version_check(version=version, kind=CheckKind(kind)).verdict
