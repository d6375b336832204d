"""The WebSocket endpoint inference workers connect to (`/ws/workers/`); the protocol is inference.protocol."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.core.cache import cache

from inference import protocol
from stories import services as play
from stories.selectors import last_frame_key
from workers import services
from workers.models import WorkerNode


def bearer_token(scope: dict[str, Any]) -> str:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


class WorkerConsumer(AsyncWebsocketConsumer):
    """One connected inference worker: authentication, announcements, and the sessions it runs."""

    worker: WorkerNode | None = None

    async def connect(self) -> None:
        self.worker = await database_sync_to_async(services.worker_authenticate)(token=bearer_token(self.scope))
        if self.worker is None:
            await self.close()  # before accept: the handshake ends with 403
            return
        # Sessions this worker was given; it may speak of no other (a worker cannot write into others' streams).
        self.assigned: set[str] = set()
        await self.accept()
        await database_sync_to_async(services.worker_connect)(worker=self.worker, channel_name=self.channel_name)
        await self.send_message(
            protocol.welcome_message(worker=self.worker.name, heartbeat_seconds=settings.WORKER_HEARTBEAT_SECONDS)
        )

    async def disconnect(self, code: int) -> None:
        if self.worker is not None:
            await database_sync_to_async(self.worker_gone)()

    def worker_gone(self) -> None:
        services.worker_disconnect(worker=self.worker, channel_name=self.channel_name)
        play.worker_sessions_reassign(worker=self.worker)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        received_type = None
        try:
            if bytes_data is not None:
                await self.session_frame(bytes_data)
                return
            message = protocol.decode(text_data)
            received_type = message["type"]
            handler = self.handlers.get(received_type)
            if handler is not None:
                await handler(self, message)
            else:
                await self.session_message(message)
        except protocol.ProtocolError as error:
            await self.send_message(protocol.error_message(error=str(error), received_type=received_type))

    async def worker_hello(self, message: dict[str, Any]) -> None:
        hello = protocol.parse_hello(message)
        await database_sync_to_async(services.worker_announce)(
            worker=self.worker,
            engines=hello.engines,
            slots=hello.slots,
            free_slots=hello.free_slots,
            device=hello.device,
        )
        await database_sync_to_async(play.sessions_dispatch_queued)()

    async def worker_heartbeat(self, message: dict[str, Any]) -> None:
        heartbeat = protocol.parse_heartbeat(message)
        await database_sync_to_async(services.worker_heartbeat)(worker=self.worker, free_slots=heartbeat.free_slots)

    async def session_frame(self, data: bytes) -> None:
        session, number, sequence, jpeg = protocol.frame_decode(data)
        self.check_assigned(session)
        await cache.aset(last_frame_key(session), number, timeout=None)
        await self.channel_layer.group_send(
            play.session_group(session), {"type": "session.frame", "number": number, "sequence": sequence, "jpeg": jpeg}
        )

    async def session_message(self, message: dict[str, Any]) -> None:
        session = protocol.parse_session_message(message)
        self.check_assigned(session)
        kind = message["type"]
        if kind == "session.applied":
            await database_sync_to_async(play.session_input_applied)(
                session_id=session, sequence=int(message["sequence"]), tick=int(message["tick"]),
                events=list(message.get("events", [])), story=message.get("story"),
            )  # fmt: skip
        elif kind == "session.snapshot":
            try:
                engine_state = base64.b64decode(message["engine_state"], validate=True)
            except (binascii.Error, KeyError, TypeError):
                raise protocol.ProtocolError("a snapshot needs its engine_state in base64") from None
            await database_sync_to_async(play.session_snapshot_store)(
                session_id=session, tick=int(message["tick"]), sequence=int(message["sequence"]),
                engine_state=engine_state, narrative=message.get("narrative", {}),
            )  # fmt: skip
        else:
            relayed = {key: value for key, value in message.items() if key != "session"}
            relayed["type"] = "status" if kind == "session.opened" else kind.removeprefix("session.")
            if kind == "session.opened":
                relayed["state"] = "running"
            await self.channel_layer.group_send(
                play.session_group(session), {"type": "session.message", "message": relayed}
            )

    def check_assigned(self, session: str) -> None:
        if session not in self.assigned:
            raise protocol.ProtocolError(f"session {session} is not assigned to this worker")

    async def worker_forward(self, event: dict[str, Any]) -> None:
        """A message from the platform's services for this worker (see stories.services.send_to_worker)."""
        message = event["message"]
        if message["type"] == "session.open":
            self.assigned.add(message["session"])
        elif message["type"] == "session.close":
            self.assigned.discard(message["session"])
        await self.send_message(message)

    async def send_message(self, message: dict[str, Any]) -> None:
        await self.send(text_data=protocol.encode(message))

    handlers = {"worker.hello": worker_hello, "worker.heartbeat": worker_heartbeat}
