"""The play protocol between a browser and the platform on `/ws/play/<session>/`, version 1 (see PROTOCOL.md).

Only the checks live here: what a well-formed message from a browser is, and how binary frames are framed.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 4096  # the longest prompt or speech fits; anything larger is refused, not truncated
MAX_TEXT_LENGTH = 1000
MAX_CHARACTER_NAME_LENGTH = 100  # worlds.models.Character.name
# `seq` is logged in a PositiveIntegerField: PostgreSQL's integer stops at 2**31 - 1, and one past it was
# accepted here, failed the insert, and was answered "the database is unavailable" (the page retried forever).
MAX_SEQ = 2**31 - 1
MAX_FRAME = 2**32 - 1  # frame numbers travel as uint32 (BROWSER_FRAME_HEADER)
MAX_CHOICE_INDEX = 99  # far beyond the handful a beat offers; the worker refuses one it did not offer
KEYS = ("KeyW", "KeyA", "KeyS", "KeyD", "ArrowLeft", "ArrowRight")
INPUT_TYPES = ("key_down", "key_up", "prompt", "choice", "speech", "pause", "resume")
# A page names itself in the socket's query, `?browser=<id>`: a random id it picks when it loads, so that each
# tab's `seq` is checked for resends against that tab's alone. Without one, inputs are told apart per player.
BROWSER_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
# The close code when the player's sign-in ends (log-out, password change, suspension): the page should send
# them to log in rather than reconnect. 4000-4999 are the application's own codes (RFC 6455, 7.4.2).
CLOSE_SIGNED_OUT = 4001
# Browser frames: frame number and the last applied input's session sequence, then the JPEG.
BROWSER_FRAME_HEADER = struct.Struct(">II")


class PlayProtocolError(ValueError):
    """A message the platform refuses; its text goes back to the browser, and the connection stays open."""


@dataclass(frozen=True)
class Input:
    """A player's input: logged, then forwarded to the worker."""

    type: str
    client_sequence: int
    payload: dict[str, Any]


@dataclass(frozen=True)
class Ack:
    """The browser has drawn frames up to `frame`; the platform may send it newer ones."""

    frame: int


def browser_id(query_string: bytes) -> str | None:
    """The page's id from the socket's query string: "" when it sends none, None when it sends a malformed one."""
    values = parse_qs(query_string.decode("latin-1"), keep_blank_values=True).get("browser", [])
    if not values:
        return ""
    return values[0] if len(values) == 1 and BROWSER_ID.fullmatch(values[0]) else None


def parse(text: str | None, size: int) -> Input | Ack:
    if text is None:
        raise PlayProtocolError("binary messages are not accepted from browsers")
    if size > MAX_MESSAGE_BYTES:
        raise PlayProtocolError(f"message of {size} bytes; at most {MAX_MESSAGE_BYTES}")
    try:
        message = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlayProtocolError(f"message is not valid JSON ({error.msg} at position {error.pos})") from None
    except RecursionError:  # 4,096 bytes of brackets nest deeper than the parser's stack
        raise PlayProtocolError("message nests too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise PlayProtocolError("message must be a JSON object with a string 'type'")
    kind = message["type"]
    if kind == "ack":
        return Ack(frame=whole_number(message, "frame", low=0, high=MAX_FRAME))
    if kind not in INPUT_TYPES:
        raise PlayProtocolError(f"unknown message type {kind[:40]!r}; expected ack or one of {', '.join(INPUT_TYPES)}")
    sequence = whole_number(message, "seq", low=1, high=MAX_SEQ)
    return Input(type=kind, client_sequence=sequence, payload=input_payload(kind, message))


def input_payload(kind: str, message: dict[str, Any]) -> dict[str, Any]:
    if kind in ("key_down", "key_up"):
        if message.get("key") not in KEYS:
            raise PlayProtocolError(f"'key' must be one of {', '.join(KEYS)}")
        return {"type": kind, "key": message["key"]}
    if kind in ("prompt", "speech"):
        payload = {"type": kind, "text": words(message, "text", MAX_TEXT_LENGTH)}
        if kind == "speech":
            payload["character"] = words(message, "character", MAX_CHARACTER_NAME_LENGTH)
        return payload
    if kind == "choice":
        return {"type": kind, "index": whole_number(message, "index", low=0, high=MAX_CHOICE_INDEX)}
    return {"type": kind}


def whole_number(message: dict[str, Any], field: str, *, low: int, high: int) -> int:
    value = message.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise PlayProtocolError(f"'{field}' must be a whole number from {low} to {high}")
    return value


def words(message: dict[str, Any], field: str, longest: int) -> str:
    """A text field, stripped: 1 to `longest` characters of printable text. NUL (which PostgreSQL's JSON refuses)
    and the other control characters but tab and newline are refused, as are lone surrogates ("\\ud800"
    parses, but cannot be written as UTF-8)."""
    value = message.get(field)
    text = value.strip() if isinstance(value, str) else ""
    if not 1 <= len(text) <= longest:
        raise PlayProtocolError(f"'{field}' must be 1 to {longest} characters")
    if any(unprintable(character) for character in text):
        raise PlayProtocolError(f"'{field}' may hold only printable text")
    return text


def unprintable(character: str) -> bool:
    code = ord(character)
    return (code < 32 and character not in "\t\n") or 0xD800 <= code <= 0xDFFF
