"""Background work for play sessions."""

from __future__ import annotations

from celery import shared_task

from stories import services

# Long enough to ride out a page reload or a network blip without giving up the worker slot.
PARK_AFTER_SECONDS = 30


@shared_task(ignore_result=True)
def session_park_if_unwatched(session_id: str) -> None:
    services.session_park_if_unwatched(session_id=session_id)
