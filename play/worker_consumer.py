"""The sessions an inference worker runs, on its endpoint (`/ws/workers/`): frames relayed to the session's
browsers, applied inputs and snapshots recorded, narrative work (recall, exchanges, proposals) answered."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import msgspec
import numpy as np
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer
from django.core.cache import cache

from common.concurrency import database_call
from inference import protocol
from inference.language.embedding import EMBEDDING_DIMENSIONS
from moderation.services import generated_output_blocked_record
from play import protocol as browser_protocol
from play import services as play
from play.models import PlaySession
from play.selectors import character_recall, last_frame_key
from workers.consumers import WorkerEndpoint

logger = logging.getLogger(__name__)

# A failover replays to the newest frame number written; a quarter second is 5 frames at 20 a second.
LAST_FRAME_EVERY_SECONDS = 0.25
# Closed sessions a connection remembers: far more than a worker's slots close within one tick's messages.
CLOSED_KEPT = 1000


def embedding_decoded(data: bytes) -> np.ndarray:
    """A little-endian float32 embedding as an array (384,), or ProtocolError."""
    if len(data) != EMBEDDING_DIMENSIONS * 4:
        raise protocol.ProtocolError(f"an embedding has {EMBEDDING_DIMENSIONS} float32 values, not {len(data) / 4:g}")
    return np.frombuffer(data, dtype="<f4").astype(np.float32)


def recall_for(message: protocol.SessionRecall, query: np.ndarray) -> dict[str, Any]:
    session = PlaySession.objects.select_related("version__world", "owner").get(pk=message.session)
    return character_recall(
        session=session,
        character_id=message.character,
        speaker=message.speaker,
        query=query,
        recent=message.recent[-8:],
    )


def blocked_record(message: protocol.SessionBlocked) -> None:
    world_id = PlaySession.objects.filter(pk=message.session).values_list("version__world_id", flat=True).get()
    generated_output_blocked_record(
        session_id=message.session,
        world_id=world_id,
        character=message.character,
        text=message.text,
        terms=message.terms,
    )


def frame_relayed(data: bytes) -> tuple[protocol.FrameHeader, dict[str, Any]]:
    """A worker's binary frame, checked, and the channel-layer event that carries it to the consumers of the
    session's browsers (PlayConsumer.session_frame). Browsers read the frame without its session id: sliced
    once here, sent as it is to each."""
    header = protocol.frame_decode(data)
    event = {
        "type": "session.frame",
        "number": header.number,
        "sequence": header.sequence,
        "video": header.codec != "jpeg",
        "key": header.key,
        "data": data[protocol.SESSION_ID_BYTES :],
    }
    return header, event


class WorkerConsumer(WorkerEndpoint):
    """One connected inference worker and the sessions it was given."""

    async def connect(self) -> None:
        # Sessions this worker was given; it may speak of no other (a worker cannot write into others' streams).
        self.assigned: set[str] = set()
        # Sessions closed on it, newest last: what it sent of them before it read the close is dropped, not refused.
        self.closed: dict[str, None] = {}
        # Each session's newest frame number, and when it was last written to the cache.
        self.last_frames: dict[str, int] = {}
        self.last_frames_written: dict[str, float] = {}
        self.frames = get_channel_layer(play.FRAMES_LAYER)
        await super().connect()

    async def worker_ready(self) -> None:
        await database_call(play.sessions_dispatch_queued)()

    async def worker_heartbeat(self, heartbeat: protocol.WorkerHeartbeat) -> None:
        await super().worker_heartbeat(heartbeat)
        # Sessions whose viewers vanished without a disconnect (their daphne died) give their slots back here.
        self.record(play.sessions_park_unwatched, worker=self.worker)

    async def worker_left(self) -> None:
        await cache.aset_many(
            {last_frame_key(session): number for session, number in self.last_frames.items()}, timeout=None
        )
        await database_call(play.worker_sessions_reassign)(worker=self.worker)

    async def frame_received(self, data: bytes) -> None:
        header, frame = frame_relayed(data)
        if not self.speaks_of(header.session):
            return
        await self.frames.group_send(play.session_group(header.session), frame)
        await self.last_frame_note(header.session, header.number)

    async def last_frame_note(self, session: str, number: int) -> None:
        """Keep the newest frame number where a failover finds it, at most every LAST_FRAME_EVERY_SECONDS.

        Django's async cache calls run on the one thread that all consumers' database work shares: written
        for every frame, they would queue behind that work and hold back every session's frames under load.
        A failover replays to the last number written and numbers its frames from there, so a browser waits at
        most that long for a frame newer than it has.
        """
        self.last_frames[session] = number
        now = time.monotonic()
        if now - self.last_frames_written.get(session, 0.0) >= LAST_FRAME_EVERY_SECONDS:
            self.last_frames_written[session] = now
            await cache.aset(last_frame_key(session), number, timeout=None)

    async def message_received(self, message: protocol.WorkerToPlatform) -> None:
        if isinstance(message, protocol.InputsApplied):
            applied = [applied for applied in message.applied if self.speaks_of(applied.session)]
            if applied:
                self.record(play.session_inputs_applied, applied=[play.applied_effects(each) for each in applied])
            return
        spoken_of = getattr(message, "session", None)
        if not self.speaks_of(spoken_of):
            return
        session = uuid.UUID(spoken_of)
        match message:
            case protocol.SessionMissing():
                self.record(play.session_inputs_resend, session_id=session)
            case protocol.SessionSnapshot():
                self.record(
                    play.session_snapshot_store,
                    session_id=session,
                    tick=message.tick,
                    sequence=message.sequence,
                    engine_state=message.engine_state,
                    narrative=msgspec.to_builtins(message.narrative),
                )
            case protocol.SessionRecall():
                recalled = await database_call(recall_for)(message, embedding_decoded(message.query))
                await self.send_message(
                    protocol.SessionRecalled(session=message.session, request=message.request, **recalled)
                )
            case protocol.SessionExchange():
                memories = [
                    (memory.text, memory.importance, embedding_decoded(memory.embedding)) for memory in message.memories
                ]
                await database_call(play.session_exchange_record)(
                    session_id=session,
                    sequence=message.sequence,
                    character_id=message.character,
                    speaker=message.speaker,
                    said=message.said,
                    reply=message.reply,
                    memories=memories,
                )
            case protocol.SessionPropose():
                await self.session_propose(message)
            case protocol.SessionBlocked():
                await database_call(blocked_record)(message)
            case protocol.SessionNarration(viewer=None, retold=False):
                # Told for the first time, to every browser: kept for a page that reloads. One retold (a reopened
                # session, a page that just arrived) repeats where the story stands, kept when it was first told.
                self.record(play.session_narration_record, session_id=session, text=message.text)
                await self.browsers_relay(session, message)
            case protocol.SessionDebugPrompt():
                prompt = browser_protocol.DebugPrompt(
                    character=message.character, sections=message.sections, messages=message.messages
                )
                await self.channel_layer.group_send(
                    play.session_group(session), {"type": "session.creator_message", "message": prompt.as_builtins()}
                )
            case _:
                await self.browsers_relay(session, message)

    async def browsers_relay(self, session: uuid.UUID, message: protocol.WorkerToPlatform) -> None:
        """To the session's browsers, or to the one browser the message names (a reopen's answer to a browser that
        arrived); translated to the browser protocol (play/PROTOCOL.md), never passed through."""
        try:
            relayed = browser_protocol.from_worker(message, worker=self.worker_name)
        except browser_protocol.PlayProtocolError as error:
            raise protocol.ProtocolError(str(error)) from None
        event = {"type": "session.message", "message": relayed.as_builtins()}
        viewer = getattr(message, "viewer", None)
        if viewer is None:
            await self.channel_layer.group_send(play.session_group(session), event)
            return
        try:
            channel = play.viewer_channel(viewer, session_id=session)
        except ValueError as error:
            raise protocol.ProtocolError(str(error)) from None
        try:
            await self.channel_layer.send(channel, event)
        except ChannelFull:  # as group_send does for a browser that stopped reading; it gets the next message
            logger.warning(
                "the browser channel %s of session %s is full; dropped a %s", channel, session, type(relayed).__name__
            )

    async def session_propose(self, message: protocol.SessionPropose) -> None:
        try:
            event, running = await database_call(play.session_proposal_append)(
                session_id=message.session, payload=msgspec.to_builtins(message.input)
            )
        except ValueError as error:
            raise protocol.ProtocolError(str(error)) from None
        # Straight back over this socket, not through the worker's channel: the proposer hosts the session,
        # and a channel full of a busy Live world's inputs would refuse a proposal already logged.
        if running:
            await self.send_message(play.input_forward_message(event))

    def speaks_of(self, session: str | None) -> bool:
        """Whether what the worker sent of `session` is taken: yes for a session given to it; quietly no for one
        closed on it a moment ago (its last frames, snapshot or applied inputs crossed the close on the wire);
        ProtocolError for any other (a worker cannot write into others' streams)."""
        if session is not None and session in self.assigned:
            return True
        if session is not None and session in self.closed:
            return False
        raise protocol.ProtocolError(f"session {session} is not assigned to this worker")

    async def worker_forward(self, event: dict[str, Any]) -> None:
        """A message from the platform's services for this worker, encoded once (play.services.send_to_worker)."""
        if event["kind"] == "session.open":
            self.assigned.add(event["session"])
        elif event["kind"] == "session.close":
            self.assigned.discard(event["session"])
            self.closed[event["session"]] = None
            if len(self.closed) > CLOSED_KEPT:
                del self.closed[next(iter(self.closed))]  # closed longest ago
        await self.send(text_data=event["text"])
