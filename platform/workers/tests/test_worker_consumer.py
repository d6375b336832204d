"""The /ws/workers/ endpoint, through Channels' WebsocketCommunicator against the configured channel layer."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from config.routing import application
from inference import protocol
from workers.models import WorkerNode
from workers.selectors import workers_connected, workers_summary
from workers.services import worker_issue_token

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("database_connections_closed_after"),
]


async def connect(token: str) -> tuple[WebsocketCommunicator, bool]:
    communicator = WebsocketCommunicator(
        application, "/ws/workers/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await communicator.connect()
    return communicator, connected


async def connect_worker(name: str = "gpu-box-1") -> WebsocketCommunicator:
    _, token = await database_sync_to_async(worker_issue_token)(name=name)
    communicator, connected = await connect(token)
    assert connected
    welcome = await communicator.receive_json_from()
    assert welcome == protocol.welcome_message(worker=name, heartbeat_seconds=welcome["heartbeat_seconds"])
    return communicator


async def test_it_refuses_a_forged_token() -> None:
    await database_sync_to_async(worker_issue_token)(name="gpu-box-1")
    _, connected = await connect("wlw_forged-token")
    assert not connected


async def test_it_refuses_a_rotated_token() -> None:
    _, old_token = await database_sync_to_async(worker_issue_token)(name="gpu-box-1")
    await database_sync_to_async(worker_issue_token)(name="gpu-box-1")
    _, connected = await connect(old_token)
    assert not connected


async def test_a_hello_records_engines_and_slots() -> None:
    communicator = await connect_worker()
    await communicator.send_json_to(
        protocol.hello_message(engines=["raycaster"], slots=8, free_slots=6, device="cuda:0")
    )
    await communicator.send_json_to(protocol.heartbeat_message(free_slots=5))  # ordered after the hello
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
    await communicator.send_json_to(protocol.heartbeat_message(free_slots=2))
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
