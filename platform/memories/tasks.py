"""Celery tasks: a period of conversation consolidated into one summary memory."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from memories.services import acquaintance_consolidate


# The service re-checks under a lock that the period is still unsummarised, so a redelivered task (acks are
# late) or a second one queued for the same period does nothing. A lost database connection is retried.
@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def memories_consolidate(acquaintance_id: int) -> bool:
    """Whether this run wrote a summary."""
    return acquaintance_consolidate(acquaintance_id=acquaintance_id) is not None
