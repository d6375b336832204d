"""The ASGI front: /livez on the event loop, and a bounded number of Django requests at once."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from hypothesis import given, settings
from hypothesis import strategies as st

from shell.front import LivenessAnswered, RequestsBounded


def http_scope(path: str, method: str = "GET") -> dict[str, Any]:
    return {"type": "http", "path": path, "method": method, "headers": []}


async def nothing_received() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


class Answer:
    """What an ASGI application sent for one request."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(message.get("body", b"") for message in self.messages[1:])


class SlowApplication:
    """Stands where Django does: answers 200 once released, counting how many requests it holds at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most_inside = 0
        self.release = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            await self.release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": scope["path"].encode()})
        finally:
            self.inside -= 1


@pytest.mark.asyncio
async def test_livez_is_answered_while_every_request_of_the_process_is_busy() -> None:
    behind = SlowApplication()
    front = LivenessAnswered(RequestsBounded(behind, running=2, wait_seconds=30))
    pages = [asyncio.create_task(front(http_scope(f"/gallery/{n}/"), nothing_received, Answer())) for n in range(6)]
    await asyncio.sleep(0.05)
    answer = Answer()
    await asyncio.wait_for(front(http_scope("/livez"), nothing_received, answer), timeout=1)
    assert (answer.status, answer.body) == (200, b"ok")
    assert b"no-cache" in answer.headers[b"cache-control"]
    head = Answer()
    await front(http_scope("/livez", "HEAD"), nothing_received, head)
    assert (head.status, head.body) == (200, b"")
    behind.release.set()
    await asyncio.gather(*pages)


@settings(max_examples=25, deadline=None)
@given(running=st.integers(1, 6), requests=st.integers(0, 20))
def test_no_more_requests_run_at_once_than_allowed_and_each_is_answered(running: int, requests: int) -> None:
    async def burst() -> None:
        behind = SlowApplication()
        front = RequestsBounded(behind, running=running, wait_seconds=30)
        answers = [Answer() for _ in range(requests)]
        tasks = [asyncio.create_task(front(http_scope(f"/{n}"), nothing_received, answers[n])) for n in range(requests)]
        await asyncio.sleep(0.01)
        assert behind.inside == min(running, requests)
        behind.release.set()
        await asyncio.gather(*tasks)
        assert behind.most_inside <= running
        expected = [(200, f"/{n}".encode()) for n in range(requests)]
        assert [(answer.status, answer.body) for answer in answers] == expected

    asyncio.run(burst())


@pytest.mark.asyncio
async def test_a_request_that_waits_past_its_budget_is_told_the_server_is_busy() -> None:
    behind = SlowApplication()
    front = RequestsBounded(behind, running=1, wait_seconds=0.1)
    first = asyncio.create_task(front(http_scope("/first"), nothing_received, Answer()))
    await asyncio.sleep(0.01)
    waited = Answer()
    await front(http_scope("/second"), nothing_received, waited)
    assert waited.status == 503
    assert waited.headers[b"retry-after"] == b"1"
    assert b"busy" in waited.body
    behind.release.set()
    await first
    after = Answer()
    await front(http_scope("/third"), nothing_received, after)  # the turn the busy answer never took is free
    assert after.status == 200


class ThreadRecorder:
    """Stands where Django's ASGIHandler does: a thread-sensitive context around the request, and in it two
    synchronous calls, as middleware and a view make, noting the thread each ran on."""

    def __init__(self) -> None:
        self.threads: list[tuple[str, threading.Thread]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async with ThreadSensitiveContext():
            for _ in range(2):
                self.threads.append((scope["path"], await sync_to_async(threading.current_thread)()))
                await asyncio.sleep(0)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@settings(max_examples=15, deadline=None)
@given(running=st.integers(1, 4), requests=st.integers(1, 24))
def test_requests_run_on_threads_kept_for_them_one_thread_a_request(running: int, requests: int) -> None:
    async def burst() -> None:
        behind = ThreadRecorder()
        front = RequestsBounded(behind, running=running, wait_seconds=30)
        await asyncio.gather(*(front(http_scope(f"/{n}"), nothing_received, Answer()) for n in range(requests)))
        by_request: dict[str, set[threading.Thread]] = {}
        for path, thread in behind.threads:  # the threads themselves: an ended thread's number can come again
            by_request.setdefault(path, set()).add(thread)
        assert all(len(threads) == 1 for threads in by_request.values()), by_request
        used = set().union(*by_request.values())
        assert len(used) <= running
        assert threading.current_thread() not in used

    asyncio.run(burst())


@pytest.mark.asyncio
async def test_websockets_pass_by_the_bound() -> None:
    seen: list[str] = []

    async def sockets(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    front = LivenessAnswered(RequestsBounded(sockets, running=1, wait_seconds=0.1))
    await front({"type": "websocket", "path": "/livez"}, nothing_received, Answer())
    assert seen == ["websocket"]
