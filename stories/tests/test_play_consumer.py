"""The browser's socket, through Channels' communicator and the configured channel layer (Redis in CI)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client

from accounts.models import User
from accounts.tests.factories import UserFactory
from config.routing import application
from stories.models import PlaySession, SessionEvent
from stories.tests.factories import PlaySessionFactory
from workers.models import WorkerNode

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("database_connections_closed_after"),
]


def cookie_for(user: User) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(session_id: Any, user: User | None, origin: bytes = b"http://127.0.0.1") -> WebsocketCommunicator:
    headers = [(b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", await database_sync_to_async(cookie_for)(user)))
    return WebsocketCommunicator(application, f"/ws/play/{session_id}/", headers=headers)


async def forwarded_input(worker_channel: str) -> dict[str, Any]:
    """The next input the worker is sent (a browser arriving also asks the worker to resend the story)."""
    while (message := (await get_channel_layer().receive(worker_channel))["message"])["type"] != "session.input":
        pass
    return message


@pytest_asyncio.fixture
async def running() -> AsyncIterator[tuple[PlaySession, str]]:
    """A running session whose worker is a real channel of the channel layer this test reads."""
    layer = get_channel_layer()
    worker_channel = await layer.new_channel()
    worker = await database_sync_to_async(WorkerNode.objects.create)(
        name="test-worker", token_hash=uuid.uuid4().hex, channel_name=worker_channel, slots=4, engines=["raycaster"]
    )
    session = await database_sync_to_async(PlaySessionFactory)(status="running", worker=worker)
    yield session, worker_channel


async def test_a_player_connects_and_an_input_is_logged_before_it_reaches_the_worker(running: Any) -> None:
    session, worker_channel = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    connected, _ = await communicator.connect()
    assert connected
    welcome = await communicator.receive_json_from()
    assert welcome["role"] == "player"
    await communicator.send_json_to({"type": "key_down", "key": "KeyW", "seq": 1})
    accepted = await communicator.receive_json_from()
    assert accepted == {"type": "accepted", "seq": 1, "sequence": 1, "duplicate": False}
    forwarded = await forwarded_input(worker_channel)
    assert forwarded == {"type": "session.input", "session": str(session.pk), "sequence": 1,
                                    "input": {"type": "key_down", "key": "KeyW"}}  # fmt: skip
    assert await database_sync_to_async(SessionEvent.objects.filter(session=session, sequence=1).exists)()
    await communicator.disconnect()


async def test_a_resent_input_is_acknowledged_but_logged_once(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    for _ in range(2):
        await communicator.send_json_to({"type": "prompt", "text": "make it night", "seq": 7})
    first, second = await communicator.receive_json_from(), await communicator.receive_json_from()
    assert (first["duplicate"], second["duplicate"]) == (False, True)
    assert first["sequence"] == second["sequence"]
    assert await database_sync_to_async(SessionEvent.objects.filter(session=session).count)() == 1
    await communicator.disconnect()


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{broken", "not valid JSON"),
        (json.dumps({"type": "teleport", "seq": 1}), "unknown message type"),
        (json.dumps({"type": "key_down", "key": "KeyQ", "seq": 1}), "'key' must be"),
        (json.dumps({"type": "prompt", "text": "x" * 5000, "seq": 1}), "at most 4096"),
        (json.dumps({"type": "choice", "index": -1, "seq": 1}), "'index'"),
        (json.dumps({"type": "pause"}), "'seq'"),
    ],
)
async def test_a_bad_message_gets_an_error_and_the_connection_stays_up(running: Any, text: str, complaint: str) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    await communicator.send_to(text_data=text)
    error = await communicator.receive_json_from()
    assert error["type"] == "error"
    assert complaint in error["error"]
    await communicator.send_json_to({"type": "pause", "seq": 1})
    assert (await communicator.receive_json_from())["type"] == "accepted"
    await communicator.disconnect()


async def test_another_player_is_refused_before_any_frame(running: Any) -> None:
    session, _ = running
    stranger = await database_sync_to_async(UserFactory)()
    communicator = await connect(session.pk, stranger)
    connected, _ = await communicator.connect()
    assert not connected


async def test_an_anonymous_visitor_and_a_foreign_origin_are_refused(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    for communicator in (await connect(session.pk, None), await connect(session.pk, owner, b"https://evil.example")):
        connected, _ = await communicator.connect()
        assert not connected


async def test_frames_beyond_two_unacknowledged_wait_and_only_the_newest_is_sent(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    group = f"play.{session.pk}"
    for number in range(1, 7):
        await get_channel_layer().group_send(group, {"type": "session.frame", "number": number, "sequence": 0,
                                                     "jpeg": b"jpeg%d" % number})  # fmt: skip
    received = [await communicator.receive_from() for _ in range(2)]
    assert [frame[8:] for frame in received] == [b"jpeg1", b"jpeg2"]
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.send_json_to({"type": "ack", "frame": 2})
    newest = await communicator.receive_from()
    assert newest[8:] == b"jpeg6"
    await communicator.disconnect()


async def test_a_flood_of_inputs_is_rate_limited_with_an_error(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    for sequence in range(1, 101):
        await communicator.send_json_to({"type": "key_up", "key": "KeyW", "seq": sequence})
    replies = [await communicator.receive_json_from(timeout=5) for _ in range(100)]
    assert any(reply["type"] == "error" and "slow down" in reply["error"] for reply in replies)
    await communicator.disconnect()


async def test_a_live_participants_prompt_that_breaks_the_rating_never_reaches_the_world(running: Any) -> None:
    session, worker_channel = running
    await database_sync_to_async(PlaySession.objects.filter(pk=session.pk).update)(is_live=True)
    session.is_live = True
    participant = await database_sync_to_async(UserFactory)()
    await database_sync_to_async(session.participants.add)(participant)
    communicator = await connect(session.pk, participant)
    await communicator.connect()
    await communicator.receive_json_from()
    await communicator.send_json_to({"type": "prompt", "text": "a bloody murder in the square", "seq": 1})
    refused = await communicator.receive_json_from()
    assert refused["type"] == "error"
    assert "moderation filter" in refused["error"]
    await communicator.send_json_to({"type": "prompt", "text": "it starts snowing", "seq": 2})
    assert (await communicator.receive_json_from())["type"] == "accepted"
    forwarded = await forwarded_input(worker_channel)
    assert forwarded["input"] == {"type": "prompt", "text": "it starts snowing",
                                             "participant": participant.username}  # fmt: skip
    await communicator.disconnect()
