"""Reads about inference workers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet, Sum
from django.utils import timezone

from inference.engine import WorldEngine, available_engines
from inference.play.host import CONVERSATION
from workers.models import WorkerNode


def workers_connected() -> QuerySet[WorkerNode]:
    """Workers with an open connection that heartbeat recently; a worker killed mid-beat ages out."""
    fresh_since = timezone.now() - timedelta(seconds=settings.WORKER_STALE_AFTER_SECONDS)
    return WorkerNode.objects.filter(disconnected_at__isnull=True, last_heartbeat_at__gte=fresh_since)


def workers_summary() -> dict[str, object]:
    connected = workers_connected()
    totals = connected.aggregate(slots=Sum("slots"), free_slots=Sum("free_slots"))
    return {
        "connected": connected.count(),
        "slots": totals["slots"] or 0,
        "free_slots": totals["free_slots"] or 0,
        "engines": sorted({engine for engines in connected.values_list("engines", flat=True) for engine in engines}),
    }


def engines_offered() -> list[str]:
    """The engines a creator may pick: those some connected worker serves, and those the operator configured
    (WORLDLOOM_ENGINES: workers not connected at this moment, a GPU fleet scaled to zero) or, when none are
    configured, those this process can build, which an embedded or same-machine worker serves."""
    return list(engine_labels())


def engines_known(local: dict[str, type[WorldEngine]]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The facts of every engine known here, by name (what connected workers announced, over what this process's
    own engines state), and the names connected workers serve."""
    facts: dict[str, dict[str, Any]] = {
        name: {key: getattr(engine.facts, key) for key in ("width", "height", "frames_per_second", "codec", "device")}
        for name, engine in local.items()
    }
    connected: set[str] = set()
    for engines, announced in workers_connected().values_list("engines", "engine_facts"):
        connected.update(engines)
        facts |= announced
    return facts, connected


def engine_frame_size(name: str) -> tuple[int, int]:
    """The width and height of the frames an engine streams, so the player's picture has its shape before the
    first frame; the raycaster's 256x256 for an engine nobody here knows."""
    known = engines_known(available_engines())[0].get(name)
    if known is None:
        return 256, 256
    return int(known["width"]), int(known["height"])


def engine_labels() -> dict[str, str]:
    """Each offered engine (see engines_offered), by name, with what it draws ("worldmodel: 64x64 at 20 fps,
    cpu"; a video codec is named: "raycaster-video: 640x352 at 20 fps, h264, cpu"): from the facts its connected
    workers announced, else from the engine as this process knows it; the bare name if neither."""
    local = available_engines()
    facts, connected = engines_known(local)
    offered = sorted((connected | set(settings.WORLDLOOM_ENGINES or local)) - {CONVERSATION})
    labels = {}
    for name in offered:
        known = facts.get(name)
        # JPEG goes unsaid: it is what every small engine streams; a video codec tells the creator more.
        codec = f", {known['codec']}" if known and known.get("codec", "jpeg") != "jpeg" else ""
        labels[name] = (
            f"{name}: {known['width']}x{known['height']} at {known['frames_per_second']} fps{codec}, {known['device']}"
            if known
            else name
        )
    return labels
