"""The WebSocket endpoint inference workers connect to (`/ws/workers/`); the protocol is inference.protocol."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from inference import protocol
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
    """One connected inference worker: authenticates it, records its announcements and heartbeats."""

    worker: WorkerNode | None = None

    async def connect(self) -> None:
        self.worker = await database_sync_to_async(services.worker_authenticate)(token=bearer_token(self.scope))
        if self.worker is None:
            await self.close()  # before accept: the handshake ends with 403
            return
        await self.accept()
        await database_sync_to_async(services.worker_connect)(worker=self.worker, channel_name=self.channel_name)
        await self.send_message(
            protocol.welcome_message(worker=self.worker.name, heartbeat_seconds=settings.WORKER_HEARTBEAT_SECONDS)
        )

    async def disconnect(self, code: int) -> None:
        if self.worker is not None:
            await database_sync_to_async(services.worker_disconnect)(worker=self.worker, channel_name=self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        received_type = None
        try:
            message = protocol.decode(text_data)
            received_type = message["type"]
            handler = self.handlers.get(received_type)
            if handler is None:
                raise protocol.ProtocolError(f"unknown message type {received_type!r}")
            await handler(self, message)
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

    async def worker_heartbeat(self, message: dict[str, Any]) -> None:
        heartbeat = protocol.parse_heartbeat(message)
        await database_sync_to_async(services.worker_heartbeat)(worker=self.worker, free_slots=heartbeat.free_slots)

    async def send_message(self, message: dict[str, Any]) -> None:
        await self.send(text_data=protocol.encode(message))

    handlers = {"worker.hello": worker_hello, "worker.heartbeat": worker_heartbeat}
