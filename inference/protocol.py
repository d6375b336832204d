"""The worker protocol: the JSON messages an inference worker and the platform exchange on `/ws/workers/`.

Version 1. The worker opens a WebSocket to `/ws/workers/` with the header `Authorization: Bearer <token>`
(a token an operator issued with `manage.py worker_token NAME`); a refused token ends the handshake with 403.

| direction          | type               | fields                                                    |
| ------------------ | ------------------ | --------------------------------------------------------- |
| platform → worker  | `platform.welcome` | `protocol`, `worker` (its name), `heartbeat_seconds`       |
| worker → platform  | `worker.hello`     | `protocol`, `engines` (names), `slots`, `free_slots`, `device` |
| worker → platform  | `worker.heartbeat` | `free_slots`                                              |
| platform → worker  | `error`            | `error` (a sentence), `received_type` when known          |

Sessions (the platform logs every input before it forwards it, and numbers it in the session's sequence):

- platform → worker `session.open`: `session`, `engine`, `live`, `spec`, `story` (or null), `snapshot` (or null:
  `tick`, `sequence`, `engine_state` in base64, `narrative`), `replay` (logged inputs already applied, each
  with `sequence`, `tick`, `input`, `events`, `story`), `pending` (logged, not yet applied: `sequence`,
  `input`) and `target_tick` (the last frame the platform saw). A reopened session replays to that tick.
- platform → worker `session.input`: `session`, `sequence`, `input`; `session.close` and `session.refresh`
  (a browser arrived: send the story messages again): `session`.
- worker → platform binary frames: `WORKER_FRAME_HEADER` (session UUID, frame number, last applied
  sequence), then the JPEG.
- worker → platform `session.missing` (`after`: the last sequence it applied): a forwarded input came after a
  gap that is still open two ticks later (an overtaken input fills it sooner); the platform sends
  `session.open` again, whose `pending` inputs fill it. Asked again every second while the gap stays open.
- worker → platform `session.opened` (`tick`), `session.applied` (`sequence`, the `tick` it applies at, the
  `events` it became, the `story` state after a choice), `session.snapshot` (`tick`, `sequence`,
  `engine_state`, `narrative`), and `session.narration` / `session.choices` / `session.votes` (Live worlds:
  `tally` per choice, `closes_at_tick`) / `session.character_line` (`character`, `text`: a reply streamed a
  sentence at a time, then `final: true`) / `session.error`, which the platform relays to the session's
  browsers, and `session.debug_prompt` (`character`, `sections`, `messages`: the prompt a reply was written
  from), relayed to the world's creator only. A worker may only speak of sessions assigned to it.
- Narrative work (the narrative part of `session.open` carries the world's cast, hooks, rating and the safety
  filter's term lists): worker → platform `session.recall` (`request`, `character`, `speaker`, `query`: a
  base64 little-endian float32 embedding, `recent`: the latest lines) is answered by platform → worker
  `session.recalled` (`request`, `turn`, `memories`, `lore`: texts for the prompt); `session.exchange`
  (`sequence`, `character`, `speaker`, `said`, `reply`, `memories`: `text`, `importance`, `embedding`) keeps
  what the player told a character; `session.propose` (`input`: an `offer` of a beat's choices, a
  `hook_outcome`, or an `own_choice`: the offered choice a player's typed words meant) is logged by the
  platform as the session's next input and sent straight back on the same connection as `session.input`;
  `session.blocked` (`character`, `text`, `terms`) reports generated text the safety filter refused.

A malformed or unknown message is answered with `error` and the connection stays open. Both sides build and
check messages only through the functions below, so the protocol is written down in one place.
"""

from __future__ import annotations

import json
import struct
import uuid
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 1
WORKER_FRAME_HEADER = struct.Struct(">16sII")
# Messages a worker sends about a session, relayed to the session's browsers or recorded by the platform.
SESSION_MESSAGE_TYPES = (
    "session.opened",
    "session.applied",
    "session.missing",
    "session.snapshot",
    "session.narration",
    "session.choices",
    "session.error",
    "session.votes",
    "session.character_line",
    "session.debug_prompt",
    "session.recall",
    "session.exchange",
    "session.propose",
    "session.blocked",
)


class ProtocolError(ValueError):
    """A message that does not follow the protocol; its text is sent back to the peer."""


@dataclass(frozen=True)
class WorkerHello:
    engines: list[str]
    slots: int
    free_slots: int
    device: str


@dataclass(frozen=True)
class WorkerHeartbeat:
    free_slots: int


def decode(text: str | None) -> dict[str, Any]:
    """A message's JSON object with a string `type`, or ProtocolError."""
    if text is None:
        raise ProtocolError("binary messages are not part of the worker protocol")
    try:
        message = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProtocolError(f"message is not valid JSON ({error.msg} at position {error.pos})") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("message must be a JSON object with a string 'type'")
    return message


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


def hello_message(*, engines: list[str], slots: int, free_slots: int, device: str) -> dict[str, Any]:
    return {
        "type": "worker.hello",
        "protocol": PROTOCOL_VERSION,
        "engines": engines,
        "slots": slots,
        "free_slots": free_slots,
        "device": device,
    }


def heartbeat_message(*, free_slots: int) -> dict[str, Any]:
    return {"type": "worker.heartbeat", "free_slots": free_slots}


def welcome_message(*, worker: str, heartbeat_seconds: int) -> dict[str, Any]:
    return {
        "type": "platform.welcome",
        "protocol": PROTOCOL_VERSION,
        "worker": worker,
        "heartbeat_seconds": heartbeat_seconds,
    }


def error_message(*, error: str, received_type: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "error", "error": error}
    if received_type is not None:
        message["received_type"] = received_type
    return message


def session_error_message(*, session: str | None, error: str, sequence: int | None = None) -> dict[str, Any]:
    """A session's error, relayed to its browsers (with the input's `sequence` when an input caused it)."""
    message: dict[str, Any] = {"type": "session.error", "session": session, "error": error}
    if sequence is not None:
        message["sequence"] = sequence
    return message


def parse_hello(message: dict[str, Any]) -> WorkerHello:
    if message.get("protocol") != PROTOCOL_VERSION:
        raise ProtocolError(
            f"unsupported protocol {message.get('protocol')!r}; this platform speaks {PROTOCOL_VERSION}"
        )
    engines = message.get("engines")
    if not isinstance(engines, list) or not all(isinstance(name, str) and name for name in engines):
        raise ProtocolError("'engines' must be a list of engine names")
    slots = _count(message, "slots")
    free_slots = _count(message, "free_slots")
    if free_slots > slots:
        raise ProtocolError("'free_slots' cannot exceed 'slots'")
    device = message.get("device", "")
    if not isinstance(device, str) or len(device) > 100:
        raise ProtocolError("'device' must be a short string")
    return WorkerHello(engines=engines, slots=slots, free_slots=free_slots, device=device)


def parse_heartbeat(message: dict[str, Any]) -> WorkerHeartbeat:
    return WorkerHeartbeat(free_slots=_count(message, "free_slots"))


def _count(message: dict[str, Any], field: str) -> int:
    value = message.get(field)
    # bool is an int in Python; `true` slots is a client bug, not one slot.
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10_000:
        raise ProtocolError(f"'{field}' must be a whole number from 0 to 10000")
    return value


def frame_encode(*, session: str, number: int, sequence: int, jpeg: bytes) -> bytes:
    return WORKER_FRAME_HEADER.pack(uuid.UUID(session).bytes, number, sequence) + jpeg


def frame_decode(data: bytes) -> tuple[str, int, int, bytes]:
    """(session id, frame number, last applied sequence, JPEG) of a worker's binary frame."""
    if len(data) <= WORKER_FRAME_HEADER.size:
        raise ProtocolError("a frame needs its header and an image")
    session, number, sequence = WORKER_FRAME_HEADER.unpack_from(data)
    return str(uuid.UUID(bytes=session)), number, sequence, data[WORKER_FRAME_HEADER.size :]


def parse_session_message(message: dict[str, Any]) -> str:
    """The session id a worker's session message is about, after checking the message's type and id."""
    if message["type"] not in SESSION_MESSAGE_TYPES:
        raise ProtocolError(f"unknown message type {message['type']!r}")
    try:
        return str(uuid.UUID(str(message.get("session"))))
    except ValueError:
        raise ProtocolError("'session' must be a session id") from None
