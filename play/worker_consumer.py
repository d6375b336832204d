"""The sessions an inference worker runs, on its endpoint (`/ws/workers/`): frames relayed to the session's
browsers, applied inputs and snapshots recorded, narrative work (recall, exchanges, proposals) answered."""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

import numpy as np
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

# A failover replays to the newest frame number written; a quarter second is 5 frames at 20 a second.
LAST_FRAME_EVERY_SECONDS = 0.25


def embedding_decoded(text: Any) -> np.ndarray:
    """A base64 little-endian float32 embedding as an array (384,), or ProtocolError."""
    try:
        vector = np.frombuffer(base64.b64decode(str(text), validate=True), dtype="<f4")
    except (binascii.Error, ValueError):
        raise protocol.ProtocolError("an embedding must be base64 float32") from None
    if vector.shape != (EMBEDDING_DIMENSIONS,):
        raise protocol.ProtocolError(f"an embedding has {EMBEDDING_DIMENSIONS} values, not {vector.size}")
    return vector.astype(np.float32)


def recall_for(session_id: str, message: dict[str, Any], query: np.ndarray) -> dict[str, Any]:
    session = PlaySession.objects.select_related("version__world", "owner").get(pk=session_id)
    recent = [str(line) for line in message.get("recent", [])][-8:]
    return character_recall(
        session=session, character_id=message.get("character"), speaker=message.get("speaker"), query=query,
        recent=recent,
    )  # fmt: skip


def blocked_record(session_id: str, message: dict[str, Any]) -> None:
    world_id = PlaySession.objects.filter(pk=session_id).values_list("version__world_id", flat=True).get()
    generated_output_blocked_record(
        session_id=session_id, world_id=world_id, character=str(message.get("character", "")),
        text=str(message.get("text", "")), terms=[str(term) for term in message.get("terms", [])],
    )  # fmt: skip


class WorkerConsumer(WorkerEndpoint):
    """One connected inference worker and the sessions it was given."""

    async def connect(self) -> None:
        # Sessions this worker was given; it may speak of no other (a worker cannot write into others' streams).
        self.assigned: set[str] = set()
        # Each session's newest frame number, and when it was last written to the cache.
        self.last_frames: dict[str, int] = {}
        self.last_frames_written: dict[str, float] = {}
        self.frames = get_channel_layer(play.FRAMES_LAYER)
        await super().connect()

    async def worker_ready(self) -> None:
        await database_call(play.sessions_dispatch_queued)()

    async def worker_heartbeat(self, message: dict[str, Any]) -> None:
        await super().worker_heartbeat(message)
        # Sessions whose viewers vanished without a disconnect (their daphne died) give their slots back here.
        self.record(play.sessions_park_unwatched, worker=self.worker)

    async def worker_left(self) -> None:
        await cache.aset_many({last_frame_key(session): number for session, number in self.last_frames.items()},
                              timeout=None)  # fmt: skip
        await database_call(play.worker_sessions_reassign)(worker=self.worker)

    async def frame_received(self, data: bytes) -> None:
        session, number, sequence, jpeg = protocol.frame_decode(data)
        self.check_assigned(session)
        await self.frames.group_send(
            play.session_group(session), {"type": "session.frame", "number": number, "sequence": sequence, "jpeg": jpeg}
        )
        await self.last_frame_note(session, number)

    async def last_frame_note(self, session: str, number: int) -> None:
        """Keep the newest frame number where a failover finds it, at most every LAST_FRAME_EVERY_SECONDS.

        Django's async cache calls run on the one thread that all consumers' database work shares: written
        for every frame, they queued behind that work and held back every session's frames under load (20
        players in one Live world stalled them). A failover replays to the last number written and numbers
        its frames from there, so a browser waits at most that long for a frame newer than it has.
        """
        self.last_frames[session] = number
        now = time.monotonic()
        if now - self.last_frames_written.get(session, 0.0) >= LAST_FRAME_EVERY_SECONDS:
            self.last_frames_written[session] = now
            await cache.aset(last_frame_key(session), number, timeout=None)

    async def message_received(self, message: dict[str, Any]) -> None:
        session = protocol.parse_session_message(message)
        self.check_assigned(session)
        kind = message["type"]
        if kind in self.narrative_handlers:
            await self.narrative_handlers[kind](self, session, message)
        elif kind == "session.applied":
            self.record(
                play.session_input_applied, session_id=session, sequence=int(message["sequence"]),
                tick=int(message["tick"]), events=list(message.get("events", [])), story=message.get("story"),
                hooks=[str(name) for name in message.get("hooks", [])],
            )  # fmt: skip
        elif kind == "session.missing":
            self.record(play.session_inputs_resend, session_id=session)
        elif kind == "session.snapshot":
            try:
                engine_state = base64.b64decode(message["engine_state"], validate=True)
            except (binascii.Error, KeyError, TypeError):
                raise protocol.ProtocolError("a snapshot needs its engine_state in base64") from None
            self.record(
                play.session_snapshot_store, session_id=session, tick=int(message["tick"]),
                sequence=int(message["sequence"]), engine_state=engine_state, narrative=message.get("narrative", {}),
            )  # fmt: skip
        else:
            try:  # translated to the browser protocol (stories/PROTOCOL.md), never passed through
                relayed = browser_protocol.from_worker(message, worker=self.worker.name)
            except browser_protocol.PlayProtocolError as error:
                raise protocol.ProtocolError(str(error)) from None
            await self.channel_layer.group_send(
                play.session_group(session), {"type": "session.message", "message": relayed.as_builtins()}
            )

    async def session_recall(self, session: str, message: dict[str, Any]) -> None:
        query = embedding_decoded(message.get("query"))
        recalled = await database_call(recall_for)(session, message, query)
        await self.send_message({"type": "session.recalled", "session": session, "request": message.get("request"),
                                 **recalled})  # fmt: skip

    async def session_exchange(self, session: str, message: dict[str, Any]) -> None:
        try:
            memories = [
                (str(memory["text"]), float(memory["importance"]), embedding_decoded(memory["embedding"]))
                for memory in message.get("memories", [])
            ]
            sequence = int(message["sequence"])
        except (KeyError, TypeError, ValueError):
            raise protocol.ProtocolError(
                "an exchange needs its sequence and memories as text, importance, embedding"
            ) from None
        await database_call(play.session_exchange_record)(
            session_id=session, sequence=sequence, character_id=message.get("character"),
            speaker=message.get("speaker"), said=str(message.get("said", "")), reply=str(message.get("reply", "")),
            memories=memories,
        )  # fmt: skip

    async def session_propose(self, session: str, message: dict[str, Any]) -> None:
        payload = message.get("input")
        if not isinstance(payload, dict):
            raise protocol.ProtocolError("a proposal needs its 'input'")
        try:
            event, running = await database_call(play.session_proposal_append)(session_id=session, payload=payload)
        except ValueError as error:
            raise protocol.ProtocolError(str(error)) from None
        # Straight back over this socket, not through the worker's channel: the proposer hosts the session,
        # and a channel full of a busy Live world's inputs would refuse a proposal already logged.
        if running:
            await self.send_message(play.input_forward_message(event))

    async def session_blocked(self, session: str, message: dict[str, Any]) -> None:
        await database_call(blocked_record)(session, message)

    async def session_debug_prompt(self, session: str, message: dict[str, Any]) -> None:
        try:
            relayed = browser_protocol.DebugPrompt(character=message.get("character"),
                                                   sections=message.get("sections", {}),
                                                   messages=message.get("messages", []))  # fmt: skip
        except browser_protocol.PlayProtocolError as error:
            raise protocol.ProtocolError(str(error)) from None
        await self.channel_layer.group_send(
            play.session_group(session), {"type": "session.creator_message", "message": relayed.as_builtins()}
        )

    narrative_handlers = {
        "session.recall": session_recall,
        "session.exchange": session_exchange,
        "session.propose": session_propose,
        "session.blocked": session_blocked,
        "session.debug_prompt": session_debug_prompt,
    }

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
