"""What daphne does with an HTTP request before Django sees it.

Django runs each synchronous view on a thread of its own, and every thread of a process shares one GIL. Under a
burst of pages (fifty people paging through the gallery at once) that meant:
- `/livez` waited behind the pages for seconds, the balancer's check timed out, and HAProxy took out daphnes
  that were serving, sending 503s to everyone;
- a hundred threads took turns at the GIL, each holding a database connection, and those left without one
  after the pool's wait were told the database was away, which it was not.
So `/livez` is answered on the event loop, and only a few requests of a process run Django at once: the
others wait their turn on the event loop, holding no thread and no connection, for a bounded time.

A turn comes with a thread kept for it. Django hands a request's synchronous work to a thread of that request's
own (asgiref's ThreadSensitiveContext), which asgiref starts for the request and stops after it with a second
thread: two threads started a request, which cost a cached gallery page more CPU than Django's own work on it.
"""

from __future__ import annotations

import asyncio
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext

LIVENESS_PATH = "/livez"
LIVENESS_HEADERS = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"cache-control", b"no-cache, no-store, must-revalidate, max-age=0"),
    (b"content-length", b"2"),
]
BUSY = "This server is busy with other requests; please try again in a few seconds."


def busy_retry_after(wait_seconds: float) -> int:
    """The Retry-After, in seconds, for a request that waited `wait_seconds` for its turn in vain."""
    return max(1, round(wait_seconds / 4))


class LivenessAnswered:
    """ASGI: answers `/livez` with "ok" (headers only to HEAD) and hands every other request on."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "http" or scope["path"] != LIVENESS_PATH:
            return await self.application(scope, receive, send)
        await send({"type": "http.response.start", "status": 200, "headers": LIVENESS_HEADERS})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else b"ok"})
        return None


class RequestsBounded:
    """ASGI: at most `running` HTTP requests of this process in the application at once, each running its
    synchronous work on one of `running` threads kept for them; a request that waits longer than
    `wait_seconds` for its turn is answered 503 with a Retry-After instead.

    A request cut short (its browser gone) may leave its thread finishing a database call: the next request
    given that thread waits for it, as it would for a turn, and no more than `running` run at once.
    """

    def __init__(self, application: Any, *, running: int, wait_seconds: float) -> None:
        self.application = application
        self.running = running
        self.wait_seconds = wait_seconds
        # Turns an event loop: an asyncio primitive belongs to the loop it first waited on (tests run several
        # loops in one process).
        self.turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = weakref.WeakKeyDictionary()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "http":
            return await self.application(scope, receive, send)
        loop = asyncio.get_running_loop()
        turns = self.turns.get(loop)
        if turns is None:
            turns = self.turns[loop] = Turns(self.running)
        try:
            await asyncio.wait_for(turns.semaphore.acquire(), timeout=self.wait_seconds)
        except TimeoutError:
            retry_after = str(busy_retry_after(self.wait_seconds)).encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", retry_after)]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": BUSY.encode()})
            return None
        thread = turns.threads.pop()
        try:
            async with ThreadSensitiveContext(executor=thread):
                return await self.application(scope, receive, send)
        finally:
            turns.threads.append(thread)
            turns.semaphore.release()


class Turns:
    """`running` turns and as many threads: whoever holds a turn takes a thread no one else holds."""

    def __init__(self, running: int) -> None:
        # A semaphore, not a queue of threads: asyncio's queue lets a newcomer take a thread put back before the
        # request woken for it runs, and the woken one queues again at the back.
        self.semaphore = asyncio.Semaphore(running)
        self.threads = [ThreadPoolExecutor(max_workers=1, thread_name_prefix="request") for _ in range(running)]
