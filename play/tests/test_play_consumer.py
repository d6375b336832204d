"""The browser's socket, through Channels' communicator and the configured channel layer (Redis in CI)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from accounts.models import User
from accounts.services import user_sockets_close
from accounts.tests.factories import ModeratorFactory, UserFactory
from config.routing import application
from inference import protocol as worker_protocol
from moderation.services import user_suspend
from play import frames, protocol
from play.consumers import FRAMES_IN_FLIGHT, INPUT_BURST, INPUT_RATE_PER_SECOND, VIDEO_TICKS_IN_FLIGHT, PlayConsumer
from play.models import PlaySession, SessionEvent
from play.protocol import BROWSER_FRAME_HEADER, CLOSE_INTERNAL_ERROR, CLOSE_SIGNED_OUT, JPEG_ACK_TICKS
from play.services import FRAMES_LAYER, sessions_park_unwatched, worker_forward_event
from play.tests.factories import PlaySessionFactory
from play.worker_consumer import frame_relayed
from tests.fixtures import another_process_layer, cookie_for
from workers.models import WorkerNode

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("database_connections_closed_after"),
]


OPENED: list[WebsocketCommunicator] = []


@pytest.fixture(autouse=True)
def every_message_to_a_browser_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSON message a test here receives must be one PROTOCOL.md defines (play.protocol's types)."""
    receive_from = WebsocketCommunicator.receive_from

    async def checked(communicator: WebsocketCommunicator, timeout: float = 1) -> Any:  # noqa: ASYNC109 - its signature
        message = await receive_from(communicator, timeout)
        if isinstance(message, str):
            assert protocol.browser_message(json.loads(message)).as_builtins() == json.loads(message)
        return message

    monkeypatch.setattr(WebsocketCommunicator, "receive_from", checked)


@pytest_asyncio.fixture(autouse=True)
async def communicators_ended_after(channel_layers_closed_after: None) -> AsyncIterator[None]:
    """End every consumer a test started before its event loop closes: one left running (its socket closed by
    the server, say) keeps a receive open on the shared channel layer, and the next test's loop then cannot
    take that layer's receive lock."""
    yield
    while OPENED:
        with contextlib.suppress(Exception):
            await OPENED.pop().disconnect()


def sample(name: str) -> float:
    """A metric's value in this process (play.metrics), 0 before its first observation."""
    return REGISTRY.get_sample_value(name) or 0.0


async def connect(
    session_id: Any, user: User | None, origin: bytes = b"http://127.0.0.1", path: str = "/ws/play/{}/"
) -> WebsocketCommunicator:
    headers = [(b"host", b"127.0.0.1"), (b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", (await database_sync_to_async(cookie_for)(user)).encode()))
    communicator = WebsocketCommunicator(application, path.format(session_id), headers=headers)
    OPENED.append(communicator)
    return communicator


def frame_event(number: int, *, sequence: int = 0, codec: str = "jpeg", key: bool = True) -> dict[str, Any]:
    """A frame as play.worker_consumer relays it to browsers' consumers: its header read, its bytes as they came
    (the picture names the frame, so a test sees which frames a browser was sent)."""
    worker_frame = worker_protocol.frame_encode(
        session=str(uuid.uuid4()),
        number=number,
        sequence=sequence,
        codec=codec,
        key=key,
        picture=b"%s%d" % (codec.encode(), number),
    )
    return frame_relayed(worker_frame)[1]


async def forwarded_input(worker_channel: str) -> worker_protocol.SessionInput:
    """The next input the worker is sent (a browser arriving also asks the worker to resend the story)."""
    while (event := await get_channel_layer().receive(worker_channel))["kind"] != "session.input":
        pass
    return worker_protocol.decode_from_platform(event["text"])


@pytest_asyncio.fixture
async def running() -> AsyncIterator[tuple[PlaySession, str]]:
    """A running session whose worker is a real channel of the channel layer this test reads."""
    layer = get_channel_layer()
    worker_channel = await layer.new_channel()
    worker = await database_sync_to_async(WorkerNode.objects.create)(
        name="test-worker",
        token_hash=uuid.uuid4().hex,
        token_expires_at=timezone.now() + timedelta(days=1),
        channel_name=worker_channel,
        slots=4,
        engines=["raycaster"],
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
    expected = {"type": "key_down", "key": "KeyW"}
    assert forwarded == worker_protocol.SessionInput(session=str(session.pk), sequence=1, input=expected)
    assert await database_sync_to_async(SessionEvent.objects.filter(session=session, sequence=1).exists)()
    # The first frame that applied it ends its wait, as the operators' input-to-frame histogram records.
    timed_before = sample("worldloom_input_to_frame_seconds_count")
    await get_channel_layer(FRAMES_LAYER).group_send(f"play.{session.pk}", frame_event(1, sequence=1))
    await communicator.receive_from()
    assert sample("worldloom_input_to_frame_seconds_count") - timed_before == 1
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
        # Past the log's integer column: refused here, not answered "the database is unavailable" forever.
        (json.dumps({"type": "pause", "seq": 2**31}), "'seq' must be a whole number from 1 to 2147483647"),
        (json.dumps({"type": "prompt", "text": "night\u0000", "seq": 1}), "printable text"),
        (json.dumps({"type": "speech", "text": "hello", "character": "\ud800", "seq": 1}), "printable text"),
        ("[" * 3000 + "]" * 3000, "at most 4096"),
        ("[" * 2000 + "]" * 2000, "nests too deeply"),
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


@pytest_asyncio.fixture
async def strangers_sessions() -> list[str]:
    """Sessions of other people, one of them running and one ended: none is the prober's to join."""
    return [
        str((await database_sync_to_async(PlaySessionFactory)(status=status)).pk)
        for status in ("running", "queued", "ended")
    ]


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    # The fixtures are read-only ground for every example: nobody's sessions change between them.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
async def test_no_session_id_lets_a_player_into_a_session_not_theirs(
    running: Any, strangers_sessions: list[str], data: st.DataObject
) -> None:
    session, _ = running
    prober = await database_sync_to_async(lambda: session.owner)()  # a real player, signed in, with a session
    target = data.draw(st.uuids().map(str) | st.sampled_from(strangers_sessions), label="session")
    communicator = await connect(target, prober)
    connected, _ = await communicator.connect()
    assert not connected
    assert await communicator.receive_nothing(timeout=0.01)  # refused before any frame or message


async def test_a_player_s_sockets_close_when_their_sign_in_ends(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    sockets = [await connect(session.pk, owner) for _ in range(2)]
    for communicator in sockets:
        await communicator.connect()
        await communicator.receive_json_from()
    await database_sync_to_async(user_sockets_close)(user_id=owner.pk, reason="you signed out")
    for communicator in sockets:
        assert await communicator.receive_json_from(timeout=2) == {"type": "error", "error": "you signed out"}
        assert await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": CLOSE_SIGNED_OUT}


async def test_a_socket_whose_frames_can_no_longer_be_read_is_closed_for_the_page_to_reconnect(
    running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(consumer: PlayConsumer, event: dict[str, Any]) -> None:
        raise ConnectionError("the frames' pub/sub connection is gone")

    monkeypatch.setattr(PlayConsumer, "session_frame", broken)
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    await get_channel_layer(FRAMES_LAYER).group_send(f"play.{session.pk}", frame_event(1))
    assert await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": CLOSE_INTERNAL_ERROR}


async def test_each_browser_of_a_session_gets_each_frame_and_the_process_reads_it_once(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    tabs = [await connect(session.pk, owner, path="/ws/play/{}/?browser=" + f"tab-number-{n}") for n in range(3)]
    for tab in tabs:
        await tab.connect()
        assert (await tab.receive_json_from())["type"] == "welcome"
    group = f"play.{session.pk}"
    assert [len(reader.viewers) for reader in frames.SESSIONS[asyncio.get_running_loop()].values()] == [3]
    await get_channel_layer(FRAMES_LAYER).group_send(group, frame_event(1))
    for tab in tabs:
        assert BROWSER_FRAME_HEADER.unpack_from(await tab.receive_from(timeout=2))[0] == 1
    for tab in tabs:
        await tab.disconnect()
    assert group not in frames.SESSIONS[asyncio.get_running_loop()]  # the last browser gone, the group is left


async def test_a_browser_whose_frames_fail_is_closed_and_the_session_s_other_browsers_keep_their_frames(
    running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_frame = PlayConsumer.session_frame

    async def broken_for_one_tab(consumer: PlayConsumer, event: dict[str, Any]) -> None:
        if consumer.browser == "tab-broken-1":
            raise ConnectionError("this browser's frames cannot be handled")
        await session_frame(consumer, event)

    monkeypatch.setattr(PlayConsumer, "session_frame", broken_for_one_tab)
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    tab_ids = ("tab-broken-1", "tab-healthy-2")
    broken, healthy = [await connect(session.pk, owner, path="/ws/play/{}/?browser=" + tab) for tab in tab_ids]
    for tab in (broken, healthy):
        await tab.connect()
        await tab.receive_json_from()
    layer = get_channel_layer(FRAMES_LAYER)
    await layer.group_send(f"play.{session.pk}", frame_event(1))
    assert await broken.receive_output(timeout=2) == {"type": "websocket.close", "code": CLOSE_INTERNAL_ERROR}
    assert BROWSER_FRAME_HEADER.unpack_from(await healthy.receive_from(timeout=2))[0] == 1
    await healthy.send_json_to({"type": "ack", "frame": 1})
    await layer.group_send(f"play.{session.pk}", frame_event(2))
    assert BROWSER_FRAME_HEADER.unpack_from(await healthy.receive_from(timeout=2))[0] == 2


async def test_a_frame_that_arrives_while_the_socket_is_being_accepted_is_sent_after_the_welcome(
    running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, _ = running
    accept = PlayConsumer.accept

    async def accept_after_a_frame(consumer: PlayConsumer, subprotocol: str | None = None) -> None:
        await get_channel_layer(FRAMES_LAYER).group_send(f"play.{session.pk}", frame_event(1))
        await asyncio.sleep(0.2)  # the frame reaches the consumer's channel before the socket is accepted
        await accept(consumer, subprotocol)

    monkeypatch.setattr(PlayConsumer, "accept", accept_after_a_frame)
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    connected, _ = await communicator.connect()
    assert connected
    assert (await communicator.receive_json_from())["type"] == "welcome"
    assert BROWSER_FRAME_HEADER.unpack_from(await communicator.receive_from())[0] == 1


async def test_a_suspension_closes_the_person_s_sockets_and_no_one_else_s(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    bystander_session = await database_sync_to_async(PlaySessionFactory)(status="running", worker=session.worker)
    bystander = await database_sync_to_async(lambda: bystander_session.owner)()
    suspended, watching = await connect(session.pk, owner), await connect(bystander_session.pk, bystander)
    for communicator in (suspended, watching):
        await communicator.connect()
        await communicator.receive_json_from()
    moderator = await database_sync_to_async(ModeratorFactory)()
    await database_sync_to_async(user_suspend)(user=owner, moderator=moderator, reason="Griefing in Live worlds.")
    assert await suspended.receive_json_from(timeout=2) == {"type": "error", "error": "your account is suspended"}
    assert await suspended.receive_output(timeout=2) == {"type": "websocket.close", "code": CLOSE_SIGNED_OUT}
    await watching.send_json_to({"type": "pause", "seq": 1})
    assert (await watching.receive_json_from())["type"] == "accepted"
    await watching.disconnect()
    again = await connect(session.pk, owner)
    connected, _ = await again.connect()
    assert not connected  # the suspended account's cookie no longer signs it in


async def test_an_anonymous_visitor_and_a_foreign_origin_are_refused(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    for communicator in (await connect(session.pk, None), await connect(session.pk, owner, b"https://evil.example")):
        connected, _ = await communicator.connect()
        assert not connected


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        (b"127.0.0.1:8124", b"http://localhost:1"),  # another port of another allowed host
        (b"127.0.0.1:8124", b"https://127.0.0.1:8124"),  # the right host and port, the wrong scheme
        (b"127.0.0.1:8124", b"http://127.0.0.1"),  # the default port is another port
        (b"evil.example", b"http://evil.example"),  # a Host the site does not serve
        (b"127.0.0.1", b"http://127.0.0.1:99999"),  # no origin at all
    ],
)
async def test_a_valid_cookie_from_another_origin_than_the_site_s_is_refused(
    running: Any, host: bytes, origin: bytes
) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    cookie = (await database_sync_to_async(cookie_for)(owner)).encode()
    headers = [(b"host", host), (b"origin", origin), (b"cookie", cookie)]
    communicator = WebsocketCommunicator(application, f"/ws/play/{session.pk}/", headers=headers)
    OPENED.append(communicator)
    assert not (await communicator.connect())[0]  # closed before accept: daphne answers 403


async def test_the_site_s_own_origin_is_let_through_with_its_port(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    cookie = (await database_sync_to_async(cookie_for)(owner)).encode()
    headers = [(b"host", b"127.0.0.1:8124"), (b"origin", b"http://127.0.0.1:8124"), (b"cookie", cookie)]
    communicator = WebsocketCommunicator(application, f"/ws/play/{session.pk}/", headers=headers)
    OPENED.append(communicator)
    assert (await communicator.connect())[0]
    assert (await communicator.receive_json_from())["type"] == "welcome"


@pytest.mark.parametrize("path", ["/ws/play/{}/", "/ws/play/not-a-session/", "/ws/nowhere/", "/"])
async def test_a_socket_to_an_unrouted_path_is_refused_at_the_handshake(running: Any, path: str) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(str(session.pk).upper(), owner, path=path)
    assert not (await communicator.connect())[0]  # closed before accept: daphne answers 403


async def test_frames_beyond_those_in_flight_wait_and_only_the_newest_is_sent(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    group = f"play.{session.pk}"
    dropped_before = sample("worldloom_frames_dropped_total")
    for number in range(1, FRAMES_IN_FLIGHT + 5):
        await get_channel_layer(FRAMES_LAYER).group_send(group, frame_event(number))
    received = [await communicator.receive_from() for _ in range(FRAMES_IN_FLIGHT)]
    in_flight = [b"jpeg%d" % number for number in range(1, FRAMES_IN_FLIGHT + 1)]
    assert [frame[BROWSER_FRAME_HEADER.size :] for frame in received] == in_flight
    assert await communicator.receive_nothing(timeout=0.3)
    # The three frames after those each waited and gave way to a newer one: the operators' metric counts them.
    assert sample("worldloom_frames_dropped_total") - dropped_before == 3
    # The page acknowledges only every JPEG_ACK_TICKS: the newest waiting frame goes out at its acknowledgement.
    await communicator.send_json_to({"type": "ack", "frame": JPEG_ACK_TICKS})
    newest = await communicator.receive_from()
    assert newest[BROWSER_FRAME_HEADER.size :] == b"jpeg%d" % (FRAMES_IN_FLIGHT + 4)
    await communicator.disconnect()


async def test_a_page_acknowledging_every_few_ticks_gets_the_newest_frame_whichever_ticks_had_none(
    running: Any,
) -> None:
    """The page's rule (player.js, acknowledgeJpeg) against the flow control here, with frames missing for some
    ticks (a worker falling behind skips them): the page is never left holding nothing to acknowledge while the
    server holds the newest frame back."""
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    acknowledged = received = 0
    for number in [1, 2, 5, 6, 7, 11, 12, 13, 20, 21, 22, 23, 24, 30, 31, 45]:
        await get_channel_layer(FRAMES_LAYER).group_send(f"play.{session.pk}", frame_event(number))
        while not await communicator.receive_nothing(timeout=0.3):
            received = BROWSER_FRAME_HEADER.unpack_from(await communicator.receive_from())[0]
            if received >= acknowledged + JPEG_ACK_TICKS:
                acknowledged = received
                await communicator.send_json_to({"type": "ack", "frame": received})
    assert received == 45
    await communicator.disconnect()


async def test_a_burst_of_200_inputs_gets_at_most_the_burst_accepted_and_the_rest_refused_at_once(running: Any) -> None:
    """Real wall-clock arrival: the whole burst is sent before the first input can have been logged."""
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    flood = 200
    refused_before = sample("worldloom_inputs_refused_total")
    sent_at = time.monotonic()
    for sequence in range(1, flood + 1):
        await communicator.send_json_to({"type": "key_up", "key": "KeyW", "seq": sequence})
    replies, refused_by = [], 0.0
    for _ in range(flood):
        reply = await communicator.receive_json_from(timeout=30)
        replies.append(reply)
        if reply["type"] == "error":
            refused_by = time.monotonic() - sent_at
    accepted = [reply["seq"] for reply in replies if reply["type"] == "accepted"]
    refused = [reply for reply in replies if reply["type"] != "accepted"]
    # The burst, and whatever refilled while the consumer read the burst (by the last refusal at the latest).
    assert INPUT_BURST <= len(accepted) <= INPUT_BURST + 1 + refused_by * INPUT_RATE_PER_SECOND
    assert all(reply["type"] == "error" and "slow down" in reply["error"] for reply in refused)
    assert sorted(accepted + [reply["seq"] for reply in refused]) == list(range(1, flood + 1))
    assert refused_by < 2.0  # refusals do not wait behind the accepted inputs' database work
    assert sample("worldloom_inputs_refused_total") - refused_before == len(refused)
    logged = await database_sync_to_async(SessionEvent.objects.filter(session=session).count)()
    assert logged == len(accepted)
    await asyncio.sleep(1)  # the bucket refills at its rate, and inputs go through again
    await communicator.send_json_to({"type": "key_up", "key": "KeyW", "seq": flood + 1})
    assert (await communicator.receive_json_from(timeout=10))["type"] == "accepted"
    await communicator.disconnect()


async def test_a_player_s_second_tab_counting_from_one_is_not_taken_for_a_resend(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    tabs = [await connect(session.pk, owner, path="/ws/play/{}/?browser=" + tab) for tab in ("tab-one-1", "tab-two-2")]
    replies = []
    for tab in tabs:
        await tab.connect()
        await tab.receive_json_from()
        await tab.send_json_to({"type": "pause", "seq": 1})
        replies.append(await tab.receive_json_from())
    assert [(reply["type"], reply["duplicate"]) for reply in replies] == [("accepted", False)] * 2
    await tabs[1].send_json_to({"type": "pause", "seq": 1})  # the second tab resends after a reconnect
    assert (await tabs[1].receive_json_from())["duplicate"] is True
    assert await database_sync_to_async(SessionEvent.objects.filter(session=session).count)() == 2


async def test_a_session_dispatched_while_its_socket_joins_is_welcomed_as_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from play import consumers

    session = await database_sync_to_async(PlaySessionFactory)(status="queued")
    owner = await database_sync_to_async(lambda: session.owner)()
    frames_watch = consumers.frames_watch

    async def dispatched_meanwhile(group: str, viewer: Any) -> frames.SessionFrames:
        # Runs between the consumer's reading the session and its welcome, as a dispatch in another process would;
        # on a thread of its own, since the event loop's thread may not touch the database.
        def flip_status() -> None:
            try:
                PlaySession.objects.filter(pk=session.pk).update(status="running")
            finally:
                connection.close()

        flip = threading.Thread(target=flip_status)
        flip.start()
        flip.join()
        return await frames_watch(group, viewer)

    monkeypatch.setattr(consumers, "frames_watch", dispatched_meanwhile)
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    welcome = await communicator.receive_json_from()
    assert (welcome["type"], welcome["status"]) == ("welcome", "running")
    await communicator.disconnect()


async def test_words_said_in_one_tab_reach_the_players_other_tab_naming_the_tab_they_came_from(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    tabs = [await connect(session.pk, owner, path="/ws/play/{}/?browser=" + tab) for tab in ("tab-one-1", "tab-two-2")]
    for tab in tabs:
        await tab.connect()
        assert (await tab.receive_json_from())["type"] == "welcome"
    await tabs[0].send_json_to({"type": "speech", "character": "Eve", "text": "I'm <b>Tamsin</b>.", "seq": 1})
    said = await tabs[1].receive_json_from(timeout=5)
    assert said == {
        "type": "said",
        "browser": "tab-one-1",
        "speaker": owner.get_username(),
        "character": "Eve",
        "text": "I'm <b>Tamsin</b>.",  # the page writes it as text, never as markup
    }
    for tab in tabs:
        await tab.disconnect()


@pytest.mark.parametrize(
    "query", ["browser=short", "browser=" + "x" * 65, "browser=a%20b%20c%20d%20e", "browser=&browser="]
)
async def test_a_malformed_browser_id_is_refused_at_the_handshake(running: Any, query: str) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner, path="/ws/play/{}/?" + query)
    assert not (await communicator.connect())[0]


async def test_a_queued_player_with_no_worker_for_the_engine_is_told_so_instead_of_an_estimate() -> None:
    session = await database_sync_to_async(PlaySessionFactory)(status="queued")
    await database_sync_to_async(WorkerNode.objects.create)(
        name="another-engine",
        token_hash=uuid.uuid4().hex,
        token_expires_at=timezone.now() + timedelta(days=1),
        channel_name="nowhere",
        slots=4,
        engines=["neural"],
        last_heartbeat_at=timezone.now(),
    )
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    assert (await communicator.receive_json_from())["type"] == "welcome"
    queued = await communicator.receive_json_from(timeout=5)
    assert queued == {
        "type": "status",
        "state": "queued",
        "queue_place": 1,
        "reason": "no worker is available; you keep your place",
    }
    await communicator.disconnect()


PARK_SECONDS = 1.0


async def status_of(session: PlaySession) -> str:
    return await database_sync_to_async(lambda: PlaySession.objects.get(pk=session.pk).status)()


async def parked_after(session: PlaySession, since: float, budget: float, sweep: Any = None) -> float | None:
    """Seconds from `since` until the session is parked (running `sweep` as each worker heartbeat would), or None
    when `budget` seconds pass first."""
    while (elapsed := time.monotonic() - since) < budget:
        if sweep is not None:
            await database_sync_to_async(sweep)()
        if await status_of(session) == "parked":
            return elapsed
        await asyncio.sleep(0.05)
    return None


def consumer_tasks_end() -> None:
    """What a dying daphne does to its consumers' work: it stops, and no disconnect runs."""
    for task in asyncio.all_tasks():
        if task.get_coro().__qualname__.startswith(
            ("PlayConsumer.", "WebsocketCommunicator.", "ApplicationCommunicator.")
        ):
            task.cancel()


async def test_a_session_whose_viewer_vanished_without_a_disconnect_is_parked_within_the_park_time(
    running: Any,
) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    worker = await database_sync_to_async(lambda: session.worker)()
    with override_settings(PLAY_PARK_AFTER_SECONDS=PARK_SECONDS):
        communicator = await connect(session.pk, owner)
        await communicator.connect()
        await communicator.receive_json_from()
        await asyncio.sleep(PARK_SECONDS)  # watched for a while: the viewer's presence keeps it running
        assert await status_of(session) == "running"
        communicator.future.cancel()
        consumer_tasks_end()
        OPENED.remove(communicator)
        died_at = time.monotonic()
        parked = await parked_after(
            session, died_at, budget=PARK_SECONDS * 3, sweep=lambda: sessions_park_unwatched(worker=worker)
        )
    assert parked is not None, "a session nobody watches kept its worker slot"
    assert parked <= PARK_SECONDS + 0.3


async def test_a_viewer_who_comes_back_restarts_the_park_time(running: Any) -> None:
    session, _ = running
    owner = await database_sync_to_async(lambda: session.owner)()
    with override_settings(PLAY_PARK_AFTER_SECONDS=PARK_SECONDS):
        first = await connect(session.pk, owner)
        await first.connect()
        await first.receive_json_from()
        await first.disconnect()
        await asyncio.sleep(PARK_SECONDS / 2)
        again = await connect(session.pk, owner)
        await again.connect()
        await again.receive_json_from()
        await asyncio.sleep(PARK_SECONDS / 4)
        await again.disconnect()
        left_at = time.monotonic()
        parked = await parked_after(session, left_at, budget=PARK_SECONDS * 3)
    assert parked is not None
    # A full park time after the last departure, not the rest of the first departure's timer.
    assert PARK_SECONDS - 0.05 <= parked <= PARK_SECONDS + 0.5


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
    assert forwarded.input == {"type": "prompt", "text": "it starts snowing", "participant": participant.username}
    await communicator.disconnect()


async def test_an_input_the_busy_worker_cannot_take_is_refused_and_not_kept(running: Any) -> None:
    session, _ = running
    worker_layer = another_process_layer()
    worker_channel = await worker_layer.new_channel()
    await database_sync_to_async(WorkerNode.objects.filter(pk=session.worker_id).update)(channel_name=worker_channel)
    for _ in range(worker_layer.capacity):  # the worker's process has stopped reading: its inbox is full
        refresh = worker_forward_event(worker_protocol.SessionRefresh(session=str(session.pk)))
        await worker_layer.send(worker_channel, refresh)
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    await communicator.send_json_to({"type": "key_down", "key": "KeyW", "seq": 1})
    refused = await communicator.receive_json_from()
    assert refused["type"] == "error" and refused["seq"] == 1 and "not kept" in refused["error"]
    assert not await database_sync_to_async(SessionEvent.objects.filter(session=session).exists)()

    for _ in range(worker_layer.capacity):  # the worker catches up; the page sends the input again
        await worker_layer.receive(worker_channel)
    await communicator.send_json_to({"type": "key_down", "key": "KeyW", "seq": 1})
    accepted = await communicator.receive_json_from()
    assert accepted["type"] == "accepted" and not accepted["duplicate"]
    forwarded = worker_protocol.decode_from_platform((await worker_layer.receive(worker_channel))["text"])
    assert isinstance(forwarded, worker_protocol.SessionInput) and forwarded.sequence == accepted["sequence"]
    logged = await database_sync_to_async(lambda: list(SessionEvent.objects.filter(session=session)))()
    assert [event.sequence for event in logged] == [accepted["sequence"]]
    await communicator.disconnect()


async def worker_sent_kinds(worker_channel: str, *, quiet_seconds: float = 0.3) -> list[str]:
    """The kinds of the messages the worker was sent, read until none came for `quiet_seconds` (at most 50)."""
    kinds = []
    for _ in range(50):
        try:
            event = await asyncio.wait_for(get_channel_layer().receive(worker_channel), quiet_seconds)
        except TimeoutError:
            break
        kinds.append(event["kind"])
    return kinds


async def test_a_video_stream_is_joined_at_a_key_frame_which_the_browser_asks_for_once(running: Any) -> None:
    session, worker_channel = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    group, frames = f"play.{session.pk}", get_channel_layer(FRAMES_LAYER)
    for number in (1, 2):
        await frames.group_send(group, frame_event(number, codec="h264", key=False))
    assert await communicator.receive_nothing(timeout=0.3)  # a delta without its key frame would be garbage
    # Asked once: delta 2, skipped like 1, waits for the same key frame.
    assert (await worker_sent_kinds(worker_channel)).count("session.key_frame") == 1
    await frames.group_send(group, frame_event(3, codec="h264", key=True))
    await frames.group_send(group, frame_event(4, codec="h264", key=False))
    received = [await communicator.receive_from() for _ in range(2)]
    assert [frame[BROWSER_FRAME_HEADER.size :] for frame in received] == [b"h2643", b"h2644"]
    assert BROWSER_FRAME_HEADER.unpack_from(received[0]) == (3, 0, 1, worker_protocol.KEY_FRAME_FLAG)
    assert BROWSER_FRAME_HEADER.unpack_from(received[1]) == (4, 0, 1, 0)
    await communicator.disconnect()


async def test_a_lagging_video_browser_skips_to_the_next_key_frame_and_is_never_sent_a_delta_after_a_skip(
    running: Any,
) -> None:
    session, worker_channel = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    group, frames = f"play.{session.pk}", get_channel_layer(FRAMES_LAYER)
    await worker_sent_kinds(worker_channel)  # the reopen a browser's arrival sends
    dropped_before = sample("worldloom_frames_dropped_total")
    # No acknowledgement: every frame within VIDEO_TICKS_IN_FLIGHT of the oldest unacknowledged one is sent.
    last_within = 1 + VIDEO_TICKS_IN_FLIGHT
    for number in range(1, last_within + 3):
        await frames.group_send(group, frame_event(number, codec="h264", key=number == 1))
    sent = [await communicator.receive_from() for _ in range(last_within)]
    assert [BROWSER_FRAME_HEADER.unpack_from(frame)[0] for frame in sent] == list(range(1, last_within + 1))
    assert await communicator.receive_nothing(timeout=0.3)
    assert (await worker_sent_kinds(worker_channel)).count("session.key_frame") == 1
    # Caught up on what it was sent, it still gets no delta: it lacks the two it skipped.
    await communicator.send_json_to({"type": "ack", "frame": last_within})
    await frames.group_send(group, frame_event(last_within + 3, codec="h264", key=False))
    assert await communicator.receive_nothing(timeout=0.3)
    await frames.group_send(group, frame_event(last_within + 4, codec="h264", key=True))
    await frames.group_send(group, frame_event(last_within + 5, codec="h264", key=False))
    resumed = [BROWSER_FRAME_HEADER.unpack_from(await communicator.receive_from()) for _ in range(2)]
    assert resumed == [(last_within + 4, 0, 1, worker_protocol.KEY_FRAME_FLAG), (last_within + 5, 0, 1, 0)]
    assert sample("worldloom_frames_dropped_total") - dropped_before == 3
    await communicator.disconnect()


async def test_a_video_stream_restarted_behind_the_numbers_sent_waits_for_its_next_key_frame(running: Any) -> None:
    """A failover after a daphne lost the newest frame number restarts the stream at a number already sent: its
    key frame cannot be sent (numbers only rise), so its deltas cannot be either."""
    session, worker_channel = running
    owner = await database_sync_to_async(lambda: session.owner)()
    communicator = await connect(session.pk, owner)
    await communicator.connect()
    await communicator.receive_json_from()
    group, frames = f"play.{session.pk}", get_channel_layer(FRAMES_LAYER)
    await frames.group_send(group, frame_event(1, codec="h264", key=True))
    await frames.group_send(group, frame_event(2, codec="h264", key=False))
    assert [BROWSER_FRAME_HEADER.unpack_from(await communicator.receive_from())[0] for _ in range(2)] == [1, 2]
    await worker_sent_kinds(worker_channel)  # the reopen a browser's arrival sends
    await frames.group_send(group, frame_event(2, codec="h264", key=True))  # the new worker's first frame
    await frames.group_send(group, frame_event(3, codec="h264", key=False))
    assert await communicator.receive_nothing(timeout=0.3)
    assert "session.key_frame" in await worker_sent_kinds(worker_channel)
    await frames.group_send(group, frame_event(4, codec="h264", key=True))
    assert BROWSER_FRAME_HEADER.unpack_from(await communicator.receive_from()) == (4, 0, 1, 1)
    await communicator.disconnect()


class RecordingViewer:
    """A browser's stand-in that keeps the frames it is handed."""

    def __init__(self) -> None:
        self.frames: list[int] = []

    async def frame_arrived(self, event: dict[str, Any]) -> None:
        self.frames.append(event["number"])

    async def frames_unreadable(self) -> None:
        raise AssertionError("the frames stayed readable")

    async def frames_awaited(self, count: int) -> list[int]:
        """The frames handed to it once `count` have come, or after 2.5 s."""
        for _ in range(50):
            if len(self.frames) >= count:
                break
            await asyncio.sleep(0.05)
        return self.frames


async def test_a_browser_that_joins_while_the_last_one_leaves_gets_frames_and_leaves_the_group_in_turn() -> None:
    group = f"play.{uuid.uuid4()}"
    first, second = RecordingViewer(), RecordingViewer()
    first_frames = await frames.frames_watch(group, first)
    leaving = asyncio.create_task(first_frames.leave(first))
    second_frames = await frames.frames_watch(group, second)  # found the object the first was leaving
    await leaving
    await get_channel_layer(FRAMES_LAYER).group_send(group, frame_event(1))
    assert (first.frames, await second.frames_awaited(1)) == ([], [1])
    await second_frames.leave(second)
    assert second_frames.channel is None and group not in frames.SESSIONS[asyncio.get_running_loop()]


class UnclosableViewer(RecordingViewer):
    """A browser whose socket is gone before its disconnect is handled: sending to it and closing it both fail."""

    async def frame_arrived(self, event: dict[str, Any]) -> None:
        raise ConnectionError("Attempt to send on a closed protocol")

    async def frames_unreadable(self) -> None:
        raise ConnectionError("Attempt to close a closed protocol")


async def test_a_browser_that_can_be_neither_sent_to_nor_closed_costs_the_others_nothing() -> None:
    group = f"play.{uuid.uuid4()}"
    gone, healthy = UnclosableViewer(), RecordingViewer()
    session_frames = await frames.frames_watch(group, gone)
    await frames.frames_watch(group, healthy)
    for number in (1, 2):
        await get_channel_layer(FRAMES_LAYER).group_send(group, frame_event(number))
    assert await healthy.frames_awaited(2) == [1, 2]
    for viewer in (gone, healthy):
        await session_frames.leave(viewer)
    assert session_frames.channel is None and group not in frames.SESSIONS[asyncio.get_running_loop()]
