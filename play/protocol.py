"""The play protocol between a browser and the platform on `/ws/play/<session>/`, version 1 (see PROTOCOL.md).

Every message either way is a msgspec Struct defined here, tagged by its `type`: what a browser sends is
converted to one (and so checked: types, ranges, lengths) before anything else reads it, and what it receives is
built as one. PROTOCOL.md is tested against these definitions, and the page receives the constants it needs
(`PAGE_CONSTANTS`) from the server, so each exists once.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Annotated, Any, Literal, get_args
from urllib.parse import parse_qs

import msgspec

from inference import protocol as worker_protocol
from inference.controls import KEYS, PLAYER_INPUT_TYPES

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 4096  # the longest prompt or speech fits; anything larger is refused, not truncated
MAX_TEXT_LENGTH = 1000
MAX_CHARACTER_NAME_LENGTH = 100  # worlds.models.Character.name
# `seq` is logged in a PositiveIntegerField: PostgreSQL's integer stops at 2**31 - 1, so a larger one is refused
# here; let through, it would fail the insert as "the database is unavailable", which the page retries forever.
MAX_SEQ = 2**31 - 1
MAX_FRAME = 2**32 - 1  # frame numbers travel as uint32 (BROWSER_FRAME_HEADER)
MAX_CHOICE_INDEX = 99  # far beyond the handful a beat offers; the worker refuses one it did not offer
# A page names itself in the socket's query, `?browser=<id>`: a random id it picks when it loads, so that each
# tab's `seq` is checked for resends against that tab's alone. Without one, inputs are told apart per player.
BROWSER_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
# The close code when the player's sign-in ends (log-out, password change, suspension): the page should send
# them to log in rather than reconnect. 4000-4999 are the application's own codes (RFC 6455, 7.4.2).
CLOSE_SIGNED_OUT = 4001
# The server failed for this socket alone (WebSocket's own code): the page reconnects.
CLOSE_INTERNAL_ERROR = 1011
# A page acknowledges a JPEG frame only once its number is this many past the last it acknowledged: each
# acknowledgement costs the server about as much as sending a frame. Frame numbers are ticks (20 a second), and
# the server lets more ticks than this be in flight, so a page always receives a frame it acknowledges.
JPEG_ACK_TICKS = 2
# Browser frames: frame number, the last applied input's session sequence, codec (an index of FRAME_CODECS) and
# flags (KEY_FRAME_FLAG), then the JPEG or the video packet. The worker's frame header is the session id and
# then this one, so a frame goes to browsers as it came.
BROWSER_FRAME_HEADER = struct.Struct(">IIBB")
SessionStatus = Literal["queued", "running", "parked", "ended"]
StatusState = Literal["queued", "running", "reconnecting", "ended"]
Role = Literal["player", "spectator"]

Seq = Annotated[int, msgspec.Meta(ge=1, le=MAX_SEQ)]
Frame = Annotated[int, msgspec.Meta(ge=0, le=MAX_FRAME)]
ChoiceIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_CHOICE_INDEX)]
Key = Literal[KEYS]  # type: ignore[valid-type]
# What each field must be, in the words a refusal uses.
FIELD_RULES = {
    "seq": f"a whole number from 1 to {MAX_SEQ}",
    "frame": f"a whole number from 0 to {MAX_FRAME}",
    "index": f"a whole number from 0 to {MAX_CHOICE_INDEX}",
    "key": f"one of {', '.join(KEYS)}",
    "text": f"1 to {MAX_TEXT_LENGTH} characters",
    "character": f"1 to {MAX_CHARACTER_NAME_LENGTH} characters",
}


class PlayProtocolError(ValueError):
    """A message the platform refuses; its text goes back to the browser, and the connection stays open."""


# Browser → platform. Unknown fields are ignored; every known one is checked.


class FromBrowser(msgspec.Struct, tag_field="type", kw_only=True):
    """A message a browser sends."""


class Ack(FromBrowser, tag="ack"):
    """The browser has drawn frames up to `frame`; the platform may send it newer ones."""

    frame: Frame


class BrowserInput(FromBrowser):
    """A player's input: logged, then forwarded to the worker. `seq` is the browser's own count."""

    seq: Seq

    def payload(self) -> dict[str, Any]:
        """The input as the session's log keeps it and the worker receives it: its fields but `seq`."""
        fields = msgspec.to_builtins(self)
        del fields["seq"]
        return fields


class KeyDown(BrowserInput, tag="key_down"):
    key: Key


class KeyUp(BrowserInput, tag="key_up"):
    key: Key


class Prompt(BrowserInput, tag="prompt"):
    text: str

    def __post_init__(self) -> None:
        self.text = words("text", self.text, MAX_TEXT_LENGTH)


class Speech(BrowserInput, tag="speech"):
    character: str
    text: str

    def __post_init__(self) -> None:
        self.character = words("character", self.character, MAX_CHARACTER_NAME_LENGTH)
        self.text = words("text", self.text, MAX_TEXT_LENGTH)


class Choice(BrowserInput, tag="choice"):
    index: ChoiceIndex


class Pause(BrowserInput, tag="pause"):
    pass


class Resume(BrowserInput, tag="resume"):
    pass


BROWSER_INPUTS: tuple[type[BrowserInput], ...] = (KeyDown, KeyUp, Prompt, Choice, Speech, Pause, Resume)
INPUT_TYPES = PLAYER_INPUT_TYPES
FromBrowserMessage = Ack | KeyDown | KeyUp | Prompt | Speech | Choice | Pause | Resume


def words(field: str, value: str, longest: int) -> str:
    """A text field, stripped: 1 to `longest` characters of printable text. NUL (which PostgreSQL's JSON refuses)
    and the other control characters but tab and newline are refused, as are lone surrogates ("\\ud800"
    parses, but cannot be written as UTF-8)."""
    text = value.strip()
    if not 1 <= len(text) <= longest:
        raise ValueError(f"'{field}' must be {FIELD_RULES[field]}")
    if any(unprintable(character) for character in text):
        raise ValueError(f"'{field}' may hold only printable text")
    return text


def unprintable(character: str) -> bool:
    code = ord(character)
    return (code < 32 and character not in "\t\n") or 0xD800 <= code <= 0xDFFF


def browser_id(query_string: bytes) -> str | None:
    """The page's id from the socket's query string: "" when it sends none, None when it sends a malformed one."""
    values = parse_qs(query_string.decode("latin-1"), keep_blank_values=True).get("browser", [])
    if not values:
        return ""
    return values[0] if len(values) == 1 and BROWSER_ID.fullmatch(values[0]) else None


# msgspec reads a well-formed message straight into its Struct; `convert` on the union rebuilds the union's
# type information on every call, and every frame's acknowledgement is parsed here.
BROWSER_MESSAGE_DECODER = msgspec.json.Decoder(FromBrowserMessage)


def parse(text: str | None, size: int) -> FromBrowserMessage:
    """The browser's message, checked; PlayProtocolError with a sentence naming the problem otherwise."""
    if text is None:
        raise PlayProtocolError("binary messages are not accepted from browsers")
    if size > MAX_MESSAGE_BYTES:
        raise PlayProtocolError(f"message of {size} bytes; at most {MAX_MESSAGE_BYTES}")
    try:
        return BROWSER_MESSAGE_DECODER.decode(text)
    except (msgspec.MsgspecError, UnicodeError):
        return message_read_for_refusal(text)


def message_read_for_refusal(text: str) -> FromBrowserMessage:
    """A message the decoder refused, read again by the standard parser and msgspec's conversion, whose errors
    are put in the protocol's words (`parse` reads every message as this would: tested)."""
    try:
        # The standard parser first: it keeps lone surrogates, which the printable-text check names.
        message = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlayProtocolError(f"message is not valid JSON ({error.msg} at position {error.pos})") from None
    except RecursionError:  # 4,096 bytes of brackets nest deeper than the parser's stack
        raise PlayProtocolError("message nests too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise PlayProtocolError("message must be a JSON object with a string 'type'")
    try:
        return msgspec.convert(message, FromBrowserMessage)
    except msgspec.ValidationError as error:
        raise PlayProtocolError(refusal(str(error), kind=message["type"])) from None
    except UnicodeEncodeError:  # a field's name holds a lone surrogate
        raise PlayProtocolError("field names may hold only printable text") from None


def refusal(problem: str, *, kind: str) -> str:
    """msgspec's account of a refused message in the protocol's words: which field, and what it must be."""
    missing = re.fullmatch(r"Object missing required field `(\w+)`", problem)
    if missing:
        field = missing.group(1)
        return f"'{field}' must be {FIELD_RULES[field]}" if field in FIELD_RULES else f"'{field}' is required"
    located = re.fullmatch(r"(.*) - at `\$\.(\w+)`", problem)
    if located and located.group(2) == "type":
        return f"unknown message type {kind[:40]!r}; expected ack or one of {', '.join(INPUT_TYPES)}"
    if located and located.group(2) in FIELD_RULES:
        return f"'{located.group(2)}' must be {FIELD_RULES[located.group(2)]}"
    return problem


# Platform → browser: every JSON message a browser receives is one of these (PROTOCOL.md's table is tested
# against them). msgspec checks types only on conversion, so a message is checked where the channel layer hands
# it to a browser's consumer (browser_message). A field with a default of None is left out when None; that is
# what makes a field optional in the table.


class ForBrowser(
    msgspec.Struct, tag_field="type", frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A JSON message to a browser; `type` names it on the wire."""

    def as_builtins(self) -> dict[str, Any]:
        """As a channel layer carries it, and as the browser reads it."""
        return msgspec.to_builtins(self)

    def encode(self) -> str:
        return msgspec.json.encode(self).decode()


class Welcome(ForBrowser, tag="welcome", frozen=True):
    protocol: int
    session: str
    role: Role
    status: SessionStatus


class Accepted(ForBrowser, tag="accepted", frozen=True):
    seq: int
    sequence: int
    duplicate: bool


class Status(ForBrowser, tag="status", frozen=True):
    state: StatusState
    queue_place: int | None = None
    estimated_wait_s: int | None = None
    worker: str | None = None
    reason: str | None = None


class Narration(ForBrowser, tag="narration", frozen=True):
    text: str
    # Where the story stands, told again (to a page that just arrived, or by a reopened session): a page showing
    # the story so far (the session's kept narration) may end with this line already.
    again: bool = False


class Choices(ForBrowser, tag="choices", frozen=True):
    beat: str
    choices: list[str]
    ended: bool


class Votes(ForBrowser, tag="votes", frozen=True):
    tally: list[int]
    closes_at_tick: int


class CharacterLine(ForBrowser, tag="character_line", frozen=True):
    character: str
    text: str
    final: bool


class Said(ForBrowser, tag="said", frozen=True):
    """Words a player said to a character, for every page of the session: the page they were typed on shows
    them already and knows itself by `browser`."""

    browser: str
    speaker: str
    character: str
    text: str


class DebugPrompt(ForBrowser, tag="debug_prompt", frozen=True):
    sections: dict[str, Any]
    messages: list[Any]
    character: str | None = None


class Error(ForBrowser, tag="error", frozen=True):
    error: str
    seq: int | None = None
    sequence: int | None = None


ForBrowserMessage = (
    Welcome | Accepted | Status | Narration | Choices | Votes | CharacterLine | Said | DebugPrompt | Error
)
BROWSER_MESSAGES: dict[str, type[ForBrowser]] = {
    str(kind.__struct_config__.tag): kind for kind in get_args(ForBrowserMessage)
}
# What the page needs to speak the protocol, handed to player.js through json_script.
PAGE_CONSTANTS = {
    "keys": list(KEYS),
    "close_signed_out": CLOSE_SIGNED_OUT,
    "jpeg_ack_ticks": JPEG_ACK_TICKS,
    "frame_header_bytes": BROWSER_FRAME_HEADER.size,
    "frame_codecs": list(worker_protocol.FRAME_CODECS),
    "key_frame_flag": worker_protocol.KEY_FRAME_FLAG,
    "webcodecs_codecs": worker_protocol.WEBCODECS_CODECS,
    "states": {str(state): str(state) for state in (*get_args(SessionStatus), *get_args(StatusState))},
}


def browser_message(data: dict[str, Any]) -> ForBrowser:
    """A message for a browser from its builtins (as a channel layer carried it), checked; PlayProtocolError when
    it is not one the protocol defines."""
    try:
        return msgspec.convert(data, ForBrowserMessage)
    except (msgspec.ValidationError, UnicodeEncodeError) as error:
        raise PlayProtocolError(f"not a message for browsers: {error}") from None


def from_worker(message: worker_protocol.WorkerToPlatform, *, worker: str) -> ForBrowser:
    """What a worker's session message (inference/protocol.py) becomes for the session's browsers: its own
    fields are translated, never passed through, so a browser sees only what PROTOCOL.md names."""
    match message:
        case worker_protocol.SessionOpened():
            return Status(state="running", worker=worker)
        case worker_protocol.SessionNarration():
            return Narration(text=message.text, again=message.viewer is not None or message.retold)
        case worker_protocol.SessionChoices():
            return Choices(beat=message.beat, choices=message.choices, ended=message.ended)
        case worker_protocol.SessionVotes():
            return Votes(tally=message.tally, closes_at_tick=message.closes_at_tick)
        case worker_protocol.SessionCharacterLine():
            return CharacterLine(character=message.character, text=message.text, final=message.final)
        case worker_protocol.SessionError():
            return Error(error=message.error, sequence=message.sequence)
    raise PlayProtocolError(f"{worker_protocol.type_of(message)!r} is not for browsers")
