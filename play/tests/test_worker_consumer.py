"""The /ws/workers/ endpoint, through Channels' WebsocketCommunicator against the configured channel layer."""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from datetime import timedelta

import msgspec
import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from accounts.tests.factories import UserFactory
from config.routing import application
from inference import protocol
from play.models import PlaySession, SessionEvent
from play.services import event_log_and_forward, session_group, viewer_address, worker_forward_event
from play.tests.factories import PlaySessionFactory
from play.tests.test_play_consumer import connect as browser_connect
from tests.fixtures import another_process_layer
from workers.models import WorkerNode
from workers.selectors import workers_connected, workers_summary
from workers.services import worker_issue_token

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("database_connections_closed_after", "channel_layers_closed_after"),
]


async def connect(token: str) -> tuple[WebsocketCommunicator, bool]:
    communicator = WebsocketCommunicator(
        application, "/ws/workers/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await communicator.connect()
    return communicator, connected


async def send(communicator: WebsocketCommunicator, message: protocol.WorkerToPlatform) -> None:
    await communicator.send_to(text_data=protocol.encode(message))


async def connect_worker(name: str = "gpu-box-1") -> WebsocketCommunicator:
    _, token = await database_sync_to_async(worker_issue_token)(name=name)
    communicator, connected = await connect(token)
    assert connected
    welcome = protocol.decode_from_platform(await communicator.receive_from())
    assert welcome == protocol.PlatformWelcome(worker=name, heartbeat_seconds=welcome.heartbeat_seconds)
    return communicator


@pytest.mark.parametrize(
    "forged", ["wlw_forged-token", "wlw_" + secrets.token_urlsafe(32), secrets.token_urlsafe(36), ""]
)
async def test_it_refuses_a_forged_token(forged: str) -> None:
    await database_sync_to_async(worker_issue_token)(name="gpu-box-1")
    _, connected = await connect(forged)
    assert not connected


async def test_it_refuses_an_expired_token_and_accepts_one_within_its_lifetime() -> None:
    _, expired = await database_sync_to_async(worker_issue_token)(name="old-box", lifetime=timedelta(seconds=-1))
    _, connected = await connect(expired)
    assert not connected
    _, fresh = await database_sync_to_async(worker_issue_token)(name="new-box", lifetime=timedelta(minutes=1))
    communicator, connected = await connect(fresh)
    assert connected
    await communicator.disconnect()


async def test_the_worker_token_command_issues_a_token_for_the_days_asked(capsys: pytest.CaptureFixture[str]) -> None:
    await database_sync_to_async(call_command)("worker_token", "gpu-box-9", "--days", "7")
    token = capsys.readouterr().out.strip()
    worker = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-9")
    assert token.startswith("wlw_")
    assert timedelta(days=7) - timedelta(minutes=1) < worker.token_expires_at - timezone.now() <= timedelta(days=7)


async def test_it_refuses_a_rotated_token() -> None:
    _, old_token = await database_sync_to_async(worker_issue_token)(name="gpu-box-1")
    await database_sync_to_async(worker_issue_token)(name="gpu-box-1")
    _, connected = await connect(old_token)
    assert not connected


async def test_a_hello_records_engines_and_slots() -> None:
    communicator = await connect_worker()
    await send(communicator, protocol.WorkerHello(engines=["raycaster"], slots=8, free_slots=6, device="cuda:0"))
    await send(communicator, protocol.WorkerHeartbeat(free_slots=5))  # ordered after the hello
    await communicator.receive_nothing(timeout=0.3)
    worker = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    assert (worker.engines, worker.slots, worker.free_slots, worker.device) == (["raycaster"], 8, 5, "cuda:0")
    summary = await database_sync_to_async(workers_summary)()
    assert summary == {"connected": 1, "slots": 8, "free_slots": 5, "engines": ["raycaster"]}
    await communicator.disconnect()


async def test_a_malformed_message_gets_an_error_and_the_connection_stays_open() -> None:
    communicator = await connect_worker()
    await communicator.send_to(text_data="{not json")
    error = await communicator.receive_json_from()
    assert error["type"] == "error"
    assert "not valid JSON" in error["error"]
    await communicator.send_json_to({"type": "worker.hello", "protocol": 1, "engines": "raycaster", "slots": 1})
    assert "engines" in (await communicator.receive_json_from())["error"]
    await communicator.send_json_to({"type": "worker.dance"})
    assert (await communicator.receive_json_from()) == {
        "type": "error",
        "error": "unknown message type 'worker.dance'",
        "received_type": "worker.dance",
    }
    await send(communicator, protocol.WorkerHeartbeat(free_slots=2))
    await communicator.receive_nothing(timeout=0.3)
    worker = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    assert worker.free_slots == 2
    await communicator.disconnect()


async def test_a_binary_message_is_answered_with_an_error() -> None:
    communicator = await connect_worker()
    await communicator.send_to(bytes_data=b"\x00\x01")
    assert json.loads(await communicator.receive_from())["type"] == "error"
    await communicator.disconnect()


async def test_a_disconnected_worker_no_longer_counts() -> None:
    communicator = await connect_worker()
    assert await database_sync_to_async(workers_connected().count)() == 1
    await communicator.disconnect()
    assert await database_sync_to_async(workers_connected().count)() == 0


async def assigned(communicator: WebsocketCommunicator, worker_name: str, session_id: str) -> None:
    """Give the session to the worker as play.services does: a session.open on the worker's channel."""
    channel = await database_sync_to_async(lambda: WorkerNode.objects.get(name=worker_name).channel_name)()
    opening = protocol.SessionOpen(session=session_id, engine="raycaster", spec={})
    await get_channel_layer().send(channel, worker_forward_event(opening))
    assert (await communicator.receive_json_from())["type"] == "session.open"


async def test_a_worker_may_publish_only_to_the_sessions_assigned_to_it() -> None:
    owner_worker, other_worker = await connect_worker("gpu-box-1"), await connect_worker("gpu-box-2")
    session = str((await database_sync_to_async(PlaySessionFactory)()).pk)
    browsers = await get_channel_layer().new_channel()  # stands where the session's browsers listen
    await get_channel_layer().group_add(session_group(session), browsers)
    await assigned(owner_worker, "gpu-box-1", session)
    strangers = [str(uuid.uuid4()), session]  # a session nobody runs, and one another worker runs
    for target in strangers:
        await other_worker.send_to(
            bytes_data=protocol.frame_encode(session=target, number=9, sequence=0, codec="jpeg", key=True, picture=b"x")
        )
        assert "not assigned" in (await other_worker.receive_json_from())["error"]
        await send(other_worker, protocol.SessionNarration(session=target, text="forged"))
        assert "not assigned" in (await other_worker.receive_json_from())["error"]
    await send(owner_worker, protocol.SessionNarration(session=session, text="the real one"))
    relayed = await get_channel_layer().receive(browsers)
    assert relayed["message"] == {"type": "narration", "text": "the real one"}  # and nothing forged before it
    await get_channel_layer().send(
        await database_sync_to_async(lambda: WorkerNode.objects.get(name="gpu-box-1").channel_name)(),
        worker_forward_event(protocol.SessionClose(session=session)),
    )
    assert (await owner_worker.receive_json_from())["type"] == "session.close"
    # Sent as the close crossed it on the wire: dropped, neither relayed nor refused.
    await send(owner_worker, protocol.SessionNarration(session=session, text="after closing"))
    assert await owner_worker.receive_nothing(timeout=0.3)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(get_channel_layer().receive(browsers), timeout=0.3)
    await owner_worker.disconnect()
    await other_worker.disconnect()


async def test_a_worker_that_missed_an_input_is_sent_the_session_again_with_the_inputs_it_lacks() -> None:
    worker = await connect_worker("gpu-box-1")
    session = await database_sync_to_async(PlaySessionFactory)(status="running")
    await database_sync_to_async(
        lambda: PlaySession.objects.filter(pk=session.pk).update(worker=WorkerNode.objects.get(name="gpu-box-1"))
    )()
    for _ in range(2):
        await database_sync_to_async(log_input)(session.pk)
    assert (await worker.receive_json_from())["sequence"] == 1
    assert (await worker.receive_json_from())["sequence"] == 2
    await assigned(worker, "gpu-box-1", str(session.pk))
    await send(worker, protocol.SessionMissing(session=str(session.pk), after=0))
    reopened = await worker.receive_json_from(timeout=5)
    assert reopened["type"] == "session.open" and reopened["session"] == str(session.pk)
    assert [pending["sequence"] for pending in reopened["pending"]] == [1, 2]
    await worker.disconnect()


def log_input(session_id: uuid.UUID) -> None:
    with transaction.atomic():
        event_log_and_forward(session_id=session_id, payload={"type": "key_down", "key": "KeyW"})


async def test_a_proposal_goes_back_to_its_worker_even_while_the_workers_channel_is_full() -> None:
    worker = await connect_worker("gpu-box-1")
    session = await database_sync_to_async(PlaySessionFactory)(status="running")
    await database_sync_to_async(
        lambda: PlaySession.objects.filter(pk=session.pk).update(worker=WorkerNode.objects.get(name="gpu-box-1"))
    )()
    await assigned(worker, "gpu-box-1", str(session.pk))
    # Point the worker's record at a channel of another process that has stopped reading: full, as a busy Live
    # world's inputs leave it (this consumer keeps reading its own channel, which never fills here).
    full_layer = another_process_layer()
    full_channel = await full_layer.new_channel()
    await database_sync_to_async(WorkerNode.objects.filter(name="gpu-box-1").update)(channel_name=full_channel)
    for _ in range(full_layer.capacity):
        await full_layer.send(full_channel, worker_forward_event(protocol.SessionRefresh(session=str(session.pk))))
    choices = [protocol.OfferedChoice(text="Left", to="left"), protocol.OfferedChoice(text="Right", to="right")]
    offer = protocol.Offer(beat="start", choices=choices, source="authored")
    await send(worker, protocol.SessionPropose(session=str(session.pk), input=offer))
    forwarded = protocol.decode_from_platform(await worker.receive_from(timeout=5))
    assert forwarded == protocol.SessionInput(session=str(session.pk), sequence=1, input=msgspec.to_builtins(offer))
    logged = await database_sync_to_async(lambda: list(session.events.values_list("sequence", "kind")))()
    assert logged == [(1, "offer")]
    await send(worker, protocol.WorkerHeartbeat(free_slots=1))  # the connection is still open
    assert await worker.receive_nothing(timeout=0.5)
    await worker.disconnect()
    for _ in range(full_layer.capacity):
        await full_layer.receive(full_channel)


async def test_a_browser_that_joins_alone_is_told_where_the_story_stands_and_the_others_are_not_told_again() -> None:
    worker = await connect_worker("gpu-box-1")
    node = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    session = await database_sync_to_async(PlaySessionFactory)(status="running", worker=node)
    others = [await database_sync_to_async(UserFactory)() for _ in range(3)]
    await database_sync_to_async(session.participants.add)(*others)
    await assigned(worker, "gpu-box-1", str(session.pk))
    owner = await database_sync_to_async(lambda: session.owner)()
    joined: list[WebsocketCommunicator] = []
    for user in [owner, *others]:
        browser = await browser_connect(session.pk, user)
        await browser.connect()
        assert (await browser.receive_json_from())["type"] == "welcome"
        opening = protocol.decode_from_platform(await worker.receive_from(timeout=5))
        assert isinstance(opening, protocol.SessionOpen) and opening.viewer is not None
        # The worker hosting the session answers as it does a reopen: where the story stands, for that viewer.
        for answer in (
            protocol.SessionOpened(session=str(session.pk), tick=7, viewer=opening.viewer),
            protocol.SessionNarration(session=str(session.pk), text="A hall.", viewer=opening.viewer),
            protocol.SessionChoices(
                session=str(session.pk), beat="hall", choices=["Go on"], ended=False, viewer=opening.viewer
            ),
        ):
            await worker.send_to(text_data=protocol.encode(answer))
        told = [await browser.receive_json_from(timeout=5) for _ in range(3)]
        assert [message["type"] for message in told] == ["status", "narration", "choices"]
        assert told[1] == {"type": "narration", "text": "A hall.", "again": True}  # the page may show it already
        for earlier in joined:
            assert await earlier.receive_nothing(timeout=0.2)
        joined.append(browser)

    # What the story says next is still for all of them.
    await worker.send_to(text_data=protocol.encode(protocol.SessionNarration(session=str(session.pk), text="A door.")))
    for browser in joined:
        assert await browser.receive_json_from(timeout=5) == {"type": "narration", "text": "A door."}
    for browser in joined:
        await browser.disconnect()
    await worker.disconnect()  # after the worker's reports are written
    # A reloaded page shows what was told to all; "A hall." only repeated where the story stood to each arrival.
    kept = await database_sync_to_async(lambda: list(session.narration.values_list("text", flat=True)))()
    assert kept == ["A door."]


@pytest.mark.parametrize("address", ["forged", "other-session"])
async def test_a_worker_cannot_answer_a_browser_with_an_address_the_platform_did_not_give_for_that_session(
    address: str,
) -> None:
    worker = await connect_worker("gpu-box-1")
    node = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    session = await database_sync_to_async(PlaySessionFactory)(status="running", worker=node)
    await assigned(worker, "gpu-box-1", str(session.pk))
    browser_channel = await get_channel_layer().new_channel()
    viewer = viewer_address(uuid.uuid4(), browser_channel) if address == "other-session" else "forged"
    narration = protocol.SessionNarration(session=str(session.pk), text="Psst.", viewer=viewer)
    await worker.send_to(text_data=protocol.encode(narration))

    assert "viewer's address" in (await worker.receive_json_from(timeout=5))["error"]
    with pytest.raises(asyncio.TimeoutError):
        async with asyncio.timeout(0.3):
            await get_channel_layer().receive(browser_channel)
    await worker.disconnect()


async def test_a_tick_s_report_records_every_input_it_applied_in_every_session() -> None:
    worker = await connect_worker("gpu-box-1")
    node = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    sessions = [await database_sync_to_async(PlaySessionFactory)(status="running", worker=node) for _ in range(2)]
    for session in sessions:
        await assigned(worker, "gpu-box-1", str(session.pk))
        for _ in range(2):
            await database_sync_to_async(log_input)(session.pk)
            assert (await worker.receive_json_from())["type"] == "session.input"
    first, second = (str(session.pk) for session in sessions)
    report = protocol.InputsApplied(
        applied=[
            protocol.SessionApplied(session=first, sequence=1, tick=4, events=[]),
            protocol.SessionApplied(session=second, sequence=1, tick=4, events=[{"kind": "snow"}]),
            protocol.SessionApplied(
                session=first, sequence=2, tick=5, events=[], story=protocol.StoryState(beat="left"), hooks=["door"]
            ),
        ]
    )
    await send(worker, report)
    await send(worker, protocol.WorkerHeartbeat(free_slots=1))  # recorded after the report, in order
    assert await worker.receive_nothing(timeout=0.5)

    def recorded() -> dict[tuple[str, int], tuple[int | None, dict]]:
        return {
            (str(event.session_id), event.sequence): (event.applied_tick, event.applied_effects)
            for event in SessionEvent.objects.all()
        }

    story = msgspec.to_builtins(protocol.StoryState(beat="left"))
    assert await database_sync_to_async(recorded)() == {
        (first, 1): (4, {"events": []}),
        (first, 2): (5, {"events": [], "story": story, "hooks": ["door"]}),
        (second, 1): (4, {"events": [{"kind": "snow"}]}),
        (second, 2): (None, {}),
    }
    await worker.disconnect()


async def test_a_report_naming_a_session_never_assigned_to_the_worker_is_refused() -> None:
    worker = await connect_worker("gpu-box-1")
    node = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    session = await database_sync_to_async(PlaySessionFactory)(status="running", worker=node)
    await assigned(worker, "gpu-box-1", str(session.pk))
    await database_sync_to_async(log_input)(session.pk)
    assert (await worker.receive_json_from())["type"] == "session.input"
    report = protocol.InputsApplied(
        applied=[
            protocol.SessionApplied(session=str(session.pk), sequence=1, tick=4, events=[]),
            protocol.SessionApplied(session=str(uuid.uuid4()), sequence=1, tick=4, events=[]),
        ]
    )
    await send(worker, report)

    assert "not assigned" in (await worker.receive_json_from())["error"]
    ticks = await database_sync_to_async(lambda: list(SessionEvent.objects.values_list("applied_tick", flat=True)))()
    assert ticks == [None]
    await worker.disconnect()


async def test_what_a_worker_sent_of_a_session_as_it_was_closed_is_dropped_and_the_rest_recorded() -> None:
    worker = await connect_worker("gpu-box-1")
    node = await database_sync_to_async(WorkerNode.objects.get)(name="gpu-box-1")
    kept, closed = [await database_sync_to_async(PlaySessionFactory)(status="running", worker=node) for _ in range(2)]
    for session in (kept, closed):
        await assigned(worker, "gpu-box-1", str(session.pk))
        await database_sync_to_async(log_input)(session.pk)
        assert (await worker.receive_json_from())["type"] == "session.input"
    await get_channel_layer().send(
        node.channel_name, worker_forward_event(protocol.SessionClose(session=str(closed.pk)))
    )
    assert (await worker.receive_json_from())["type"] == "session.close"
    # Sent before the worker read the close: a frame and a report naming both sessions.
    frame = protocol.frame_encode(session=str(closed.pk), number=9, sequence=1, codec="jpeg", key=True, picture=b"x")
    await worker.send_to(bytes_data=frame)
    report = protocol.InputsApplied(
        applied=[
            protocol.SessionApplied(session=str(kept.pk), sequence=1, tick=4, events=[]),
            protocol.SessionApplied(session=str(closed.pk), sequence=1, tick=4, events=[]),
        ]
    )
    await send(worker, report)
    await send(worker, protocol.WorkerHeartbeat(free_slots=1))  # recorded after the report, in order

    assert await worker.receive_nothing(timeout=0.5)  # nothing refused
    ticks = await database_sync_to_async(lambda: dict(SessionEvent.objects.values_list("session_id", "applied_tick")))()
    assert ticks == {kept.pk: 4, closed.pk: None}
    await worker.disconnect()
