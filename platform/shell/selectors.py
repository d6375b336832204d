"""The health of the services the platform depends on, each checked for real with a short timeout."""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

import kombu
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import DatabaseError, connection

from common.configuration import redacted
from workers.selectors import workers_summary

CHECK_TIMEOUT_SECONDS = 3


def database_health() -> dict[str, Any]:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return {"ok": False, "vendor": connection.vendor, "error": str(error).strip().splitlines()[0]}
    return {"ok": True, "vendor": connection.vendor, "ms": elapsed_ms(started)}


async def channel_layer_health() -> dict[str, Any]:
    """Send a message to a fresh channel and read it back through the configured layer."""
    layer = get_channel_layer()
    backend = type(layer).__name__
    started = time.perf_counter()
    nonce = secrets.token_hex(8)
    try:
        # The default prefix matters: channels-redis reads every process-local channel through one shared
        # BZPOPMIN on "specific.<client>!", so a channel with another prefix waits behind a consumer's read.
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "healthz.ping", "nonce": nonce})
        async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
            received = await layer.receive(channel)
    except Exception as error:  # any failure of the layer's transport is what this check reports
        return {"ok": False, "backend": backend, "error": f"{type(error).__name__}: {error}"}
    return {"ok": received.get("nonce") == nonce, "backend": backend, "ms": elapsed_ms(started)}


def celery_broker_health() -> dict[str, Any]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "mode": "eager", "detail": "no broker configured: tasks run inside the web process"}
    started = time.perf_counter()
    try:
        with kombu.Connection(settings.CELERY_BROKER_URL, connect_timeout=CHECK_TIMEOUT_SECONDS) as broker:
            broker.ensure_connection(max_retries=1)
    except Exception as error:  # kombu raises whatever its transport's driver raises
        return {"ok": False, "broker": redacted(settings.CELERY_BROKER_URL), "error": str(error)}
    return {"ok": True, "mode": "broker", "broker": redacted(settings.CELERY_BROKER_URL), "ms": elapsed_ms(started)}


async def platform_health() -> dict[str, Any]:
    """ "ok"; "failing" when a service fails; "degraded" when they all answer but no worker can take a session
    (none connected, or none with a slot): sessions then queue with no end in sight. Both of the last are 503."""
    database = await sync_to_async(database_health)()
    layer = await channel_layer_health()
    broker = await sync_to_async(celery_broker_health)()
    workers = await sync_to_async(workers_summary)() if database["ok"] else {"connected": None}
    healthy = database["ok"] and layer["ok"] and broker["ok"]
    workers_take_sessions = bool(workers["connected"]) and workers.get("slots", 0) > 0
    return {
        "status": "failing" if not healthy else "ok" if workers_take_sessions else "degraded",
        "mode": "embedded" if settings.EMBEDDED else "production",
        "database": database,
        "channel_layer": layer,
        "celery_broker": broker,
        "inference_workers": workers,
    }


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
