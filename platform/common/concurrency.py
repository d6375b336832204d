"""Database work called from WebSocket consumers, run where it does not hold up every other consumer.

Channels' `database_sync_to_async` runs sync code "thread-sensitively": on the one thread that all sync
code of the process shares, and opens and closes a connection around every call. Under load both hurt: in a
busy Live world each input's logging queues behind everyone else's, and with many players a daphne process
spends more time opening PostgreSQL connections (a new backend each) than running queries. On
PostgreSQL, consumers therefore run their database calls on `DATABASE_THREADS`, a few threads that each keep
one connection from call to call (checked before its first query, as CONN_HEALTH_CHECKS has Django do, and
dropped after an error), so a process holds at most that many. SQLite takes one writer at a time anyway, so
there they keep the shared thread rather than wait on each other's locks.

For the same reason our consumers skip the `close_old_connections` that channels (4.2 and later) runs on
that shared thread before every message it dispatches: one thread round trip per frame per browser, which
puts every frame of every session in the queue behind the database work.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import SyncToAsync
from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections

# Eight calls at once is more than two cores keep busy, and eight connections a daphne process stays far
# below PostgreSQL's hundred with several processes.
DATABASE_THREADS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="database")


class KeptConnectionCall(SyncToAsync):
    """A call on one of `DATABASE_THREADS`, whose connection the thread keeps for its next call."""

    def thread_handler(self, loop: Any, *args: Any, **kwargs: Any) -> Any:
        kept = connections[DEFAULT_DB_ALIAS]
        # Django checks a reused connection before its first query (CONN_HEALTH_CHECKS) when this is unset:
        # one PostgreSQL dropped while the thread waited (a restart, say) is replaced instead of failing the call.
        kept.health_check_done = False
        try:
            return super().thread_handler(loop, *args, **kwargs)
        except DatabaseError:
            kept.close()  # it may be broken; the thread's next call opens another
            raise


def database_call(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` as an awaitable on a database thread (PostgreSQL) or the shared sync thread (SQLite)."""
    if connection.vendor == "sqlite":
        return database_sync_to_async(function, thread_sensitive=True)
    return KeptConnectionCall(function, thread_sensitive=False, executor=DATABASE_THREADS)


async def messages_dispatched(
    sources: list[Callable[[], Awaitable[Any]]], dispatch: Callable[[Any], Awaitable[None]]
) -> None:
    """Each message from each source handed to `dispatch`, one at a time, each source's in order, until
    `dispatch` raises (StopConsumer ends it, inside an ExceptionGroup).

    Channels' own loop (`await_many_dispatch`) waits on one new task per source for every message with
    `asyncio.wait`, a cost paid for every message, and browsers acknowledge the frames they are sent. Here a task
    per source reads in a loop and takes its turn with a lock, which costs nothing when nobody else holds it. As with
    channels, a source's next message is read only once its last handler has returned."""
    turn = asyncio.Lock()

    async def read(source: Callable[[], Awaitable[Any]]) -> None:
        while True:
            message = await source()
            async with turn:
                await dispatch(message)

    async with asyncio.TaskGroup() as readers:
        for source in sources:
            readers.create_task(read(source))


class DatabaseCallConsumer(AsyncWebsocketConsumer):
    """A WebSocket consumer that reaches the database only through `database_call`, whose messages are
    dispatched by `messages_dispatched`."""

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Any) -> None:
        # As channels' AsyncConsumer.__call__, with our dispatch loop; both our consumers use a channel layer.
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        self.channel_name = await self.channel_layer.new_channel()
        self.channel_receive = functools.partial(self.channel_layer.receive, self.channel_name)
        self.base_send = send
        try:
            await messages_dispatched([receive, self.channel_receive], self.dispatch)
        except* StopConsumer:
            pass

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
