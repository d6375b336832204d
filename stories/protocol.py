"""The play protocol between a browser and the platform on `/ws/play/<session>/`, version 1 (see PROTOCOL.md).

Only the checks live here: what a well-formed message from a browser is, and how binary frames are framed.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 4096  # the longest prompt or speech fits; anything larger is refused, not truncated
MAX_TEXT_LENGTH = 1000
KEYS = ("KeyW", "KeyA", "KeyS", "KeyD", "ArrowLeft", "ArrowRight")
INPUT_TYPES = ("key_down", "key_up", "prompt", "choice", "speech", "pause", "resume")
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


def parse(text: str | None, size: int) -> Input | Ack:
    if text is None:
        raise PlayProtocolError("binary messages are not accepted from browsers")
    if size > MAX_MESSAGE_BYTES:
        raise PlayProtocolError(f"message of {size} bytes; at most {MAX_MESSAGE_BYTES}")
    try:
        message = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlayProtocolError(f"message is not valid JSON ({error.msg} at position {error.pos})") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise PlayProtocolError("message must be a JSON object with a string 'type'")
    kind = message["type"]
    if kind == "ack":
        return Ack(frame=whole_number(message, "frame"))
    if kind not in INPUT_TYPES:
        raise PlayProtocolError(f"unknown message type {kind!r}; expected ack or one of {', '.join(INPUT_TYPES)}")
    sequence = whole_number(message, "seq")
    if sequence < 1:
        raise PlayProtocolError("'seq' counts from 1")
    return Input(type=kind, client_sequence=sequence, payload=input_payload(kind, message))


def input_payload(kind: str, message: dict[str, Any]) -> dict[str, Any]:
    if kind in ("key_down", "key_up"):
        if message.get("key") not in KEYS:
            raise PlayProtocolError(f"'key' must be one of {', '.join(KEYS)}")
        return {"type": kind, "key": message["key"]}
    if kind in ("prompt", "speech"):
        text = message.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_LENGTH:
            raise PlayProtocolError(f"'text' must be 1 to {MAX_TEXT_LENGTH} characters")
        payload = {"type": kind, "text": text.strip()}
        if kind == "speech":
            character = message.get("character")
            if not isinstance(character, str) or not character.strip():
                raise PlayProtocolError("speech needs the 'character' it is addressed to")
            payload["character"] = character
        return payload
    if kind == "choice":
        return {"type": kind, "index": whole_number(message, "index")}
    return {"type": kind}


def whole_number(message: dict[str, Any], field: str) -> int:
    value = message.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32:
        raise PlayProtocolError(f"'{field}' must be a whole number")
    return value
