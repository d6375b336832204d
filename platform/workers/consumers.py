"""The WebSocket endpoint inference workers connect to (`/ws/workers/`): who the worker is, what it serves, that it
lives. The sessions it runs are play's (`play.worker_consumer`); the protocol is inference.protocol."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import msgspec
from django.conf import settings

from common.concurrency import DatabaseCallConsumer, database_call
from inference import protocol
from workers import services
from workers.models import WorkerNode

# How long a disconnecting worker's reports may take to be written before its sessions move on without them.
RECORDS_DRAIN_SECONDS = 10.0
logger = logging.getLogger(__name__)


def bearer_token(scope: dict[str, Any]) -> str:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


class WorkerEndpoint(DatabaseCallConsumer):
    """One connected inference worker: authentication, its announcement and heartbeats, its reports in order.

    A subclass adds what the worker does (`message_received`, `frame_received`) and what follows its hello,
    heartbeats and departure.
    """

    worker: WorkerNode | None = None
    worker_name: str

    async def connect(self) -> None:
        self.worker = await database_call(services.worker_authenticate)(token=bearer_token(self.scope))
        if self.worker is None:
            await self.close()  # before accept: the handshake ends with 403
            return
        self.worker_name = self.worker.name
        self.records: asyncio.Queue[tuple[Callable[..., object], dict[str, Any]]] = asyncio.Queue()
        self.recorder = asyncio.create_task(self.records_write())
        await self.accept()
        await database_call(services.worker_connect)(worker=self.worker, channel_name=self.channel_name)
        await self.send_message(
            protocol.PlatformWelcome(worker=self.worker_name, heartbeat_seconds=settings.WORKER_HEARTBEAT_SECONDS)
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            # A stopping server cancels the consumer without a disconnect: its writer must end with it, not be
            # left pending for the closing loop to destroy.
            await self.recorder_stop()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "recorder"):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.records.join(), RECORDS_DRAIN_SECONDS)
            await self.recorder_stop()
        if self.worker is not None:
            await database_call(services.worker_disconnect)(worker=self.worker, channel_name=self.channel_name)
            await self.worker_left()

    async def worker_left(self) -> None:
        """What the worker's departure ends, once its reports are written and it no longer counts as connected."""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            if bytes_data is not None:
                await self.frame_received(bytes_data)
                return
            message = protocol.decode_from_worker(text_data)
            if isinstance(message, protocol.WorkerHello):
                await self.worker_hello(message)
            elif isinstance(message, protocol.WorkerHeartbeat):
                await self.worker_heartbeat(message)
            else:
                await self.message_received(message)
        except protocol.ProtocolError as error:
            received_type = protocol.type_named(text_data)
            await self.send_message(protocol.PlatformError(error=str(error), received_type=received_type))

    async def frame_received(self, data: bytes) -> None:
        raise protocol.ProtocolError("binary messages are not part of the worker protocol")

    async def message_received(self, message: protocol.WorkerToPlatform) -> None:
        raise protocol.ProtocolError(f"this endpoint takes no {protocol.type_of(message)!r}")

    async def worker_hello(self, hello: protocol.WorkerHello) -> None:
        await database_call(services.worker_announce)(
            worker=self.worker,
            engines=hello.engines,
            slots=hello.slots,
            free_slots=hello.free_slots,
            device=hello.device,
            engine_facts=msgspec.to_builtins(hello.engine_facts),
        )
        await self.worker_ready()

    async def worker_ready(self) -> None:
        """What follows the worker's announcement of its engines and slots."""

    async def worker_heartbeat(self, heartbeat: protocol.WorkerHeartbeat) -> None:
        # Behind the stream, not awaited: while every database thread waits on a busy Live world's inputs, an
        # awaited heartbeat would stop this consumer, and the inputs forwarded to the worker would fill its channel.
        self.record(services.worker_heartbeat, worker=self.worker, free_slots=heartbeat.free_slots)

    def record(self, service: Callable[..., object], **arguments: Any) -> None:
        """Write what the worker reports (heartbeats, applied ticks, snapshots) behind the stream, in order.

        Awaited inline, each write would hold up the frames and inputs behind it in this one consumer: the
        worker's channel would fill and inputs be refused. One task writes them in order; a disconnect waits for it
        before the worker's departure is handled, so a failover sees them all.
        """
        self.records.put_nowait((service, arguments))

    async def recorder_stop(self) -> None:
        if hasattr(self, "recorder") and not self.recorder.done():
            self.recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.recorder

    async def records_write(self) -> None:
        while True:
            service, arguments = await self.records.get()
            try:
                await database_call(service)(**arguments)
            except Exception:
                logger.exception("could not record %s for worker %s", service.__name__, self.worker)
            finally:
                self.records.task_done()

    async def send_message(self, message: protocol.PlatformToWorker) -> None:
        await self.send(text_data=protocol.encode(message))
