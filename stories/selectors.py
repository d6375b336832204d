"""Reads about play sessions: who may join, where a session stands in the queue, what a worker needs."""

from __future__ import annotations

import base64
from typing import Any

from django.core.cache import cache
from django.db.models import Avg, Count, F, Q, QuerySet

from accounts.models import User
from stories.models import PlaySession, SessionEvent, SessionStatus
from workers.models import WorkerNode
from workers.selectors import workers_connected

# When no session has ended yet, guess this long per session for the queue's estimate.
DEFAULT_SESSION_SECONDS = 300


def last_frame_key(session_id: Any) -> str:
    return f"play:last-frame:{session_id}"


def last_frame_seen(*, session: PlaySession) -> int:
    """The newest frame the platform saw: the cache has every frame, the row the ones snapshots recorded."""
    return max(session.last_frame, cache.get(last_frame_key(session.pk), 0))


def session_role(*, session: PlaySession, user: User) -> str | None:
    """ "player", "spectator" or None (may not connect)."""
    if not user.is_authenticated:
        return None
    if session.owner_id == user.pk or session.participants.filter(pk=user.pk).exists():
        return "player"
    if session.is_live and user.has_perm("accounts.play"):
        return "spectator"
    return None


def worker_least_loaded(*, engine: str) -> WorkerNode | None:
    """The connected worker with a free slot for `engine` that runs the fewest sessions, or None."""
    candidates = (
        workers_connected()
        .annotate(running=Count("sessions", filter=Q(sessions__status=SessionStatus.RUNNING)))
        .filter(running__lt=F("slots"))
        .order_by("running", "id")
    )
    return next((worker for worker in candidates if engine in worker.engines), None)


def queue_place(*, session: PlaySession) -> int:
    """1 for the first in line."""
    return (
        PlaySession.objects.filter(status=SessionStatus.QUEUED, queued_at__lte=session.queued_at)
        .exclude(pk=session.pk)
        .count()
        + 1
    )


def queue_estimated_wait_seconds(*, place: int) -> int:
    ended = PlaySession.objects.filter(status=SessionStatus.ENDED).order_by("-last_active_at")[:20]
    average = ended.aggregate(average=Avg(F("last_active_at") - F("created_at")))["average"]
    per_session = average.total_seconds() if average else DEFAULT_SESSION_SECONDS
    slots = sum(workers_connected().values_list("slots", flat=True)) or 1
    return int(place * per_session / slots)


def session_open_message(*, session: PlaySession) -> dict[str, Any]:
    """What a worker needs to open (or reopen) the session: spec, story, last snapshot, inputs to replay."""
    document = session.version.document
    snapshot = session.snapshots.order_by("-tick").first()
    after = snapshot.sequence if snapshot else 0
    events: QuerySet[SessionEvent] = session.events.filter(sequence__gt=after)
    replay = [
        {"sequence": event.sequence, "tick": event.applied_tick, "input": event.payload,
         "events": event.applied_effects.get("events", []), "story": event.applied_effects.get("story")}
        for event in events if event.applied_tick is not None
    ]  # fmt: skip
    pending = [{"sequence": event.sequence, "input": event.payload} for event in events if event.applied_tick is None]
    stories = document.get("stories", [])
    return {
        "type": "session.open",
        "session": str(session.pk),
        "engine": session.engine,
        "live": session.is_live,
        "spec": document["world"]["engine_parameters"],
        "story": stories[0] if stories else None,
        "snapshot": {
            "tick": snapshot.tick,
            "sequence": snapshot.sequence,
            "engine_state": base64.b64encode(bytes(snapshot.engine_state)).decode(),
            "narrative": snapshot.narrative,
        }
        if snapshot
        else None,
        "replay": replay,
        "pending": pending,
        "target_tick": last_frame_seen(session=session),
    }


def version_playable(*, world: Any, user: User) -> Any:
    """The version a person plays: the newest approved one; a creator may also try their newest submission."""
    versions = world.versions.exclude(status="taken_down").order_by("-number")
    if user.is_authenticated and world.owner_id == user.pk:
        return versions.first()
    return versions.filter(status="approved").first()


def sessions_open_for(*, world: Any, user: User) -> QuerySet[PlaySession]:
    """The person's sessions of this world that can be resumed, newest first."""
    return (
        PlaySession.objects.filter(version__world=world, owner=user)
        .exclude(status=SessionStatus.ENDED)
        .order_by("-last_active_at")
    )


# What each content rating keeps out of a Live world's shared stream, by the term filter's severities.
REFUSED_BY_RATING = {"everyone": ("blocked", "mature", "teen"), "teen": ("blocked", "mature"), "mature": ("blocked",)}


def live_text_refusal(*, session: PlaySession, payload: dict[str, Any]) -> str | None:
    """Why a participant's prompt or speech may not reach a Live world everyone watches, or None."""
    from moderation.checks import term_filter_load

    if not session.is_live or "text" not in payload:
        return None
    rating = session.version.document["world"].get("content_rating", "everyone")
    found = term_filter_load().found(payload["text"])
    if any(severity in found for severity in REFUSED_BY_RATING.get(rating, REFUSED_BY_RATING["everyone"])):
        return "the moderation filter held that back; it does not fit this world's rating"
    return None


def live_session_now(*, world: Any) -> PlaySession | None:
    """The shared session a Live world is running now, if any (what its gallery page shows and lets people watch)."""
    return (
        PlaySession.objects.filter(version__world=world, is_live=True, status=SessionStatus.RUNNING)
        .select_related("owner")
        .prefetch_related("participants")
        .order_by("created_at")
        .first()
    )
