"""The play protocol between a browser and the platform on `/ws/play/<session>/`, version 1 (see PROTOCOL.md).

Only the checks live here: what a well-formed message from a browser is, and how binary frames are framed.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, fields
from types import UnionType
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints
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


# Platform → browser: every JSON message a browser receives is one of these, built here and checked as it is
# built (PROTOCOL.md's table is tested against them). A field left None is not sent; that is what makes a
# field optional in the table.


class BrowserMessage:
    """A JSON message to a browser; `type` names it on the wire."""

    type: ClassVar[str]

    def __post_init__(self) -> None:
        for field in fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            annotation = BROWSER_FIELD_TYPES[type(self)][field.name]
            if not conforms(value, annotation):
                raise PlayProtocolError(f"{self.type}: '{field.name}' may not be {value!r}")

    def as_builtins(self) -> dict[str, Any]:
        """As a channel layer carries it, and as the browser reads it."""
        return {"type": self.type} | {
            field.name: getattr(self, field.name)
            for field in fields(self)  # type: ignore[arg-type]
            if getattr(self, field.name) is not None
        }

    def encode(self) -> str:
        return json.dumps(self.as_builtins(), separators=(",", ":"))


@dataclass(frozen=True)
class Welcome(BrowserMessage):
    type: ClassVar[str] = "welcome"
    protocol: int
    session: str
    role: Literal["player", "spectator"]
    status: Literal["queued", "running", "parked", "ended"]


@dataclass(frozen=True)
class Accepted(BrowserMessage):
    type: ClassVar[str] = "accepted"
    seq: int
    sequence: int
    duplicate: bool


@dataclass(frozen=True)
class Status(BrowserMessage):
    type: ClassVar[str] = "status"
    state: Literal["queued", "running", "reconnecting", "ended"]
    queue_place: int | None = None
    estimated_wait_s: int | None = None
    worker: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Narration(BrowserMessage):
    type: ClassVar[str] = "narration"
    text: str


@dataclass(frozen=True)
class Choices(BrowserMessage):
    type: ClassVar[str] = "choices"
    beat: str
    choices: list[str]
    ended: bool


@dataclass(frozen=True)
class Votes(BrowserMessage):
    type: ClassVar[str] = "votes"
    tally: list[int]
    closes_at_tick: int


@dataclass(frozen=True)
class CharacterLine(BrowserMessage):
    type: ClassVar[str] = "character_line"
    character: str
    text: str
    final: bool = False


@dataclass(frozen=True)
class DebugPrompt(BrowserMessage):
    type: ClassVar[str] = "debug_prompt"
    character: str | None
    sections: dict[str, Any]
    messages: list[Any]


@dataclass(frozen=True)
class Error(BrowserMessage):
    type: ClassVar[str] = "error"
    error: str
    seq: int | None = None
    sequence: int | None = None


BROWSER_MESSAGES: dict[str, type[BrowserMessage]] = {
    message.type: message
    for message in (Welcome, Accepted, Status, Narration, Choices, Votes, CharacterLine, DebugPrompt, Error)
}
BROWSER_FIELD_TYPES = {message: get_type_hints(message) for message in BROWSER_MESSAGES.values()}


def conforms(value: Any, annotation: Any) -> bool:
    """Whether `value` is of the (JSON-shaped) type `annotation`: int, str, bool, Any, Literal, X | None,
    list[X] and dict[str, X]."""
    origin, arguments = get_origin(annotation), get_args(annotation)
    if annotation is Any:
        return True
    if origin is Literal:
        return value in arguments
    if origin in (UnionType, Union):
        return any(conforms(value, argument) for argument in arguments)
    if origin is list:
        return isinstance(value, list) and all(conforms(item, arguments[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(key, str) for key in value)
    if annotation is type(None):
        return value is None
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


def browser_message(data: dict[str, Any]) -> BrowserMessage:
    """A message for a browser from its builtins (as a channel layer carried it), checked; PlayProtocolError when
    it is not one the protocol defines."""
    name = data.get("type")
    kind = BROWSER_MESSAGES.get(name) if isinstance(name, str) else None
    if kind is None:
        raise PlayProtocolError(f"no browser message is called {data.get('type')!r}")
    known = {field.name for field in fields(kind)}  # type: ignore[arg-type]
    unknown = set(data) - known - {"type"}
    if unknown:
        raise PlayProtocolError(f"{kind.type} has no field {', '.join(sorted(unknown))}")
    try:
        return kind(**{name: value for name, value in data.items() if name != "type"})
    except TypeError as error:  # a required field missing
        raise PlayProtocolError(f"{kind.type}: {error}") from None


def from_worker(message: dict[str, Any], *, worker: str) -> BrowserMessage:
    """What a worker's session message (inference/protocol.py) becomes for the session's browsers: its own
    fields are translated, never passed through, so a browser sees only what PROTOCOL.md names."""
    kind = message.get("type")
    try:
        if kind == "session.opened":
            return Status(state="running", worker=worker)
        if kind == "session.narration":
            return Narration(text=message["text"])
        if kind == "session.choices":
            return Choices(beat=message["beat"], choices=message["choices"], ended=message["ended"])
        if kind == "session.votes":
            return Votes(tally=message["tally"], closes_at_tick=message["closes_at_tick"])
        if kind == "session.character_line":
            return CharacterLine(character=message["character"], text=message["text"],
                                 final=message.get("final", False))  # fmt: skip
        if kind == "session.error":
            return Error(error=message["error"], sequence=message.get("sequence"))
    except KeyError as missing:
        raise PlayProtocolError(f"{kind} needs its {missing}") from None
    raise PlayProtocolError(f"{kind!r} is not for browsers")
