"""Database work called from WebSocket consumers, run where it does not hold up every other consumer.

Channels' `database_sync_to_async` runs sync code "thread-sensitively": on the one thread that all sync
code of the process shares. Under load that thread is the bottleneck: with 20 players in one Live world,
each input's logging queued behind everyone else's, and frames waited behind the inputs (a consumer handles
one event at a time). On PostgreSQL independent transactions run well side by side, so consumers run their
database calls on the thread pool instead; SQLite takes one writer at a time anyway, so there they keep the
shared thread rather than wait on each other's locks.

For the same reason our consumers skip the `close_old_connections` that channels (4.2 and later) runs on
that shared thread before every message it dispatches: one thread round trip per frame per browser, which
put every frame of every session in the queue behind the database work. Their database work goes through
`database_call`, which closes connections on its own thread before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import connection


def database_call(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` as an awaitable that runs on a pool thread (PostgreSQL) or the shared sync thread (SQLite)."""
    return database_sync_to_async(function, thread_sensitive=connection.vendor == "sqlite")


class DatabaseCallConsumer(AsyncWebsocketConsumer):
    """A WebSocket consumer that reaches the database only through `database_call`."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
