"""The worker protocol: the JSON messages an inference worker and the platform exchange on `/ws/workers/`.

Version 1. The worker opens a WebSocket to `/ws/workers/` with the header `Authorization: Bearer <token>`
(a token an operator issued with `manage.py worker_token NAME`); a refused token ends the handshake with 403.
The platform welcomes the worker (`platform.welcome`), the worker announces its engines and slots
(`worker.hello`) and beats (`worker.heartbeat`); a malformed or unknown message is answered with `error` and
the connection stays open.

Sessions: the platform logs every input before it forwards it, and numbers it in the session's sequence. It
opens a session on a worker with `session.open` (its last snapshot, the logged inputs to replay at their ticks
up to `target_tick`, the last frame anyone saw, and the pending inputs to apply as new) and forwards inputs
with `session.input`. The worker streams binary frames (`WORKER_FRAME_HEADER`: session UUID, frame number,
last applied sequence, codec, flags (key frame), then the JPEG or the video packet); the platform asks for a
video session's next frame to be a key frame when a viewer arrives or falls behind (`session.key_frame`). It
reports, once a tick for all its sessions, what each input applied since the last report became at which tick
(`inputs.applied`, a list of `session.applied`), snapshots, and what the session's browsers see. A forwarded
input that came after a gap still open two ticks later makes the worker ask for a reopen (`session.missing`),
whose pending inputs fill it. Narrative work asks
the platform for a character's memories (`session.recall`, answered by `session.recalled`), keeps what a
player told a character (`session.exchange`), and proposes what a language model decided (`session.propose`:
an `Offer` of a beat's choices, a `HookOutcome`, an `OwnChoice`), which the platform logs as the session's
next input and sends back as `session.input`. A worker may only speak of sessions assigned to it.

Every message is a `Struct` below, tagged on `type`; both sides build them and read them only through
`encode`, `decode_from_platform` and `decode_from_worker`, so the protocol is written down in one place.
"""

from __future__ import annotations

import functools
import json
import re
import struct
import uuid
from typing import Annotated, Any, Literal, NamedTuple, get_args

import msgspec

from inference.play.story import StoryState

PROTOCOL_VERSION = 1
WORKER_FRAME_HEADER = struct.Struct(">16sIIBB")
# A frame's session id leads its header; what follows (number, sequence, codec, flags, picture) is what
# browsers are sent.
SESSION_ID_BYTES = 16
# A frame's codec byte indexes FRAME_CODECS. A JPEG frame stands alone, so it is always a key frame.
FrameCodec = Literal["jpeg", "h264", "vp8"]
FRAME_CODECS: tuple[str, ...] = get_args(FrameCodec)
KEY_FRAME_FLAG = 0x01  # the flags byte: the picture decodes without the frames before it
# What a browser hands WebCodecs' VideoDecoder.configure for each video codec, as inference.video.encoder encodes it.
# avc1.42C01F, as libx264's sequence parameter set says: profile 0x42 (baseline) with constraint flags 0xC0
# (constraint_set1: constrained baseline, which every H.264 decoder plays), level 3.1 (0x1F), which holds up to
# 1280x720 at 30 fps.
WEBCODECS_CODECS = {"h264": "avc1.42C01F", "vp8": "vp8"}
# The platform logs a sequence in a PositiveIntegerField (PostgreSQL's integer).
MAX_SEQUENCE = 2**31 - 1
MAX_TICK = 2**63 - 1
MAX_SLOTS = 10_000
# A sentence of narration or error, a character's reply, a player's prompt (the browser sends at most 1000).
MAX_TEXT_LENGTH = 10_000
# A prompt shown to a world's creator holds a whole conversation and everything the character knows.
MAX_PROMPT_LENGTH = 200_000
MAX_NAME_LENGTH = 100  # worlds.models.Character.name, engine and hook names

Sequence = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQUENCE)]
Tick = Annotated[int, msgspec.Meta(ge=0, le=MAX_TICK)]
Slots = Annotated[int, msgspec.Meta(ge=0, le=MAX_SLOTS)]
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT_LENGTH)]
Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME_LENGTH)]
# The platform's session ids are UUIDs; tests and replays of a log name sessions freely.
SessionId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
# The platform's signed address of one browser of a session: opaque to the worker, which only hands it back.
Viewer = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
RequestNumber = Annotated[int, msgspec.Meta(ge=0, le=MAX_TICK)]
WorldEvent = dict[str, Any]  # checked by the engine (inference.world.events.parse_event)
PlayerInput = dict[str, Any]  # an input as the platform logged it; the session host reads its `type`


class ProtocolError(ValueError):
    """A message that does not follow the protocol; its text is sent back to the peer."""


class Message(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    """A message of the worker protocol; its `type` is the subclass's tag."""


# Shared payloads


class NarrativeState(msgspec.Struct, kw_only=True):
    """What a session's snapshot keeps besides the engine's state: held keys, story, votes, talk and hooks.

    Every field has a default: a snapshot stored before a field existed restores with it empty.
    """

    held_keys: list[str] = []
    # Live worlds: each other participant's held keys, which walk their avatar.
    participant_keys: dict[str, list[str]] = {}
    paused: bool = False
    story: StoryState | None = None
    # Live worlds vote on choices: each voter's pick, and the tick the vote closes at (None: no vote open).
    votes: dict[str, int] = {}
    vote_closes_at: Tick | None = None
    # The recent talk with each character (by name), as chat messages from the character's side.
    conversations: dict[str, list[dict[str, str]]] = {}
    # The hook waiting for the player's response, and every hook that has fired (each fires once).
    active_hook: str | None = None
    fired_hooks: list[str] = []


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The state a session reopens from: the engine's bytes (base64 on the wire) and the narrative state."""

    tick: Tick
    sequence: Sequence
    engine_state: bytes
    narrative: NarrativeState = msgspec.field(default_factory=NarrativeState)


class ReplayedInput(msgspec.Struct, frozen=True, kw_only=True):
    """A logged input already applied: replayed at its tick, as it became then (events, story, hooks fired)."""

    sequence: Sequence
    tick: Tick
    input: PlayerInput
    events: list[WorldEvent] = []
    story: StoryState | None = None
    hooks: list[str] = []


class PendingInput(msgspec.Struct, frozen=True, kw_only=True):
    """A logged input not yet applied."""

    sequence: Sequence
    input: PlayerInput


class ToldMemory(msgspec.Struct, frozen=True, kw_only=True):
    """Something a player told a character, with its importance and embedding (little-endian float32)."""

    text: Text
    importance: float
    embedding: bytes


class OfferedChoice(msgspec.Struct, frozen=True, kw_only=True):
    text: Text
    to: Name


class Proposal(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    """What narrative work decided, proposed as the session's next input (the platform logs it, then forwards it)."""


class Offer(Proposal, tag="offer", kw_only=True, frozen=True):
    """The choices written for a beat."""

    beat: Name
    choices: list[OfferedChoice]
    source: Name  # "authored" or how they were generated


class HookOutcome(Proposal, tag="hook_outcome", kw_only=True, omit_defaults=True, frozen=True):
    """The branch a response to a hook was classified into (`effects`), or the narrator's line when none fit."""

    hook: Name
    branch: Name | None
    scores: dict[str, float]
    decided_by: Name
    effects: dict[str, Any] | None = None
    narration: Text | None = None


class OwnChoice(Proposal, tag="own_choice", kw_only=True, frozen=True):
    """Words a player typed that mean one of the offered choices."""

    beat: Name
    index: Annotated[int, msgspec.Meta(ge=0)]
    text: Text


# Platform → worker


class PlatformWelcome(Message, tag="platform.welcome", kw_only=True, frozen=True):
    protocol: int = PROTOCOL_VERSION
    worker: Name
    heartbeat_seconds: Annotated[float, msgspec.Meta(gt=0)]


class PlatformError(Message, tag="error", kw_only=True, omit_defaults=True, frozen=True):
    """The platform refused a message; `received_type` names it when it was known."""

    error: Text
    received_type: str | None = None


class SessionOpen(Message, tag="session.open", kw_only=True, frozen=True):
    """Open (or reopen after a failover) a session: replay `replay` to `target_tick`, then apply `pending`."""

    session: SessionId
    engine: Name
    spec: dict[str, Any]
    live: bool = False
    story: dict[str, Any] | None = None
    snapshot: Snapshot | None = None
    replay: list[ReplayedInput] = []
    pending: list[PendingInput] = []
    target_tick: Tick | None = None
    # The world's cast, hooks, rating and the safety filter's term lists (read by inference.narrative.setting).
    narrative: dict[str, Any] | None = None
    # A browser arrived at a session this worker may host already: the answer saying where it stands (opened,
    # narration, choices) carries this back and goes to that browser alone, not to every browser again.
    viewer: Viewer | None = None


class SessionInput(Message, tag="session.input", kw_only=True, frozen=True):
    session: SessionId
    sequence: Sequence
    input: PlayerInput


class SessionClose(Message, tag="session.close", kw_only=True, frozen=True):
    session: SessionId


class SessionRefresh(Message, tag="session.refresh", kw_only=True, frozen=True):
    """A browser arrived: send where the story stands again."""

    session: SessionId


class SessionKeyFrame(Message, tag="session.key_frame", kw_only=True, frozen=True):
    """A viewer arrived or fell behind: make the session's next video frame a key frame (JPEG frames all are)."""

    session: SessionId


class SessionRecalled(Message, tag="session.recalled", kw_only=True, frozen=True):
    """The answer to `session.recall`: texts for a character's prompt."""

    session: SessionId
    request: RequestNumber
    turn: int
    memories: list[Text]
    lore: list[Text]
    # More of the player's memories, by relevance alone, that a question about them may be answered from
    # (inference.narrative.memory.RECOLLECTION_RETRIEVAL); not put in the prompt.
    told: list[Text] = []


# Worker → platform


class EngineAnnouncement(msgspec.Struct, kw_only=True, frozen=True):
    """What a worker's engine needs and streams (inference.engine.EngineFacts), as the worker announces it."""

    device: Name
    width: Annotated[int, msgspec.Meta(ge=1, le=8192)]
    height: Annotated[int, msgspec.Meta(ge=1, le=8192)]
    frames_per_second: Annotated[int, msgspec.Meta(ge=1, le=240)]
    codec: FrameCodec
    weights: Text = ""


class WorkerHello(Message, tag="worker.hello", kw_only=True, frozen=True):
    protocol: int = PROTOCOL_VERSION
    engines: list[Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]]
    slots: Slots
    free_slots: Slots
    device: Name = ""
    # By engine name; an engine without an entry (a conversation, an older worker) announced no facts.
    engine_facts: dict[Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)], EngineAnnouncement] = {}

    def __post_init__(self) -> None:
        if self.protocol != PROTOCOL_VERSION:
            raise ValueError(f"unsupported protocol {self.protocol!r}; this platform speaks {PROTOCOL_VERSION}")
        if self.free_slots > self.slots:
            raise ValueError("'free_slots' cannot exceed 'slots'")


class WorkerHeartbeat(Message, tag="worker.heartbeat", kw_only=True, frozen=True):
    free_slots: Slots


class SessionOpened(Message, tag="session.opened", kw_only=True, omit_defaults=True, frozen=True):
    session: SessionId
    tick: Tick
    viewer: Viewer | None = None  # the SessionOpen's: for that browser only


class SessionApplied(Message, tag="session.applied", kw_only=True, omit_defaults=True, frozen=True):
    """An input applied at `tick`: the world events it became, the story after it and the hooks it fired, when
    it changed them; the platform logs them, and a reopen replays them. Sent within `inputs.applied`."""

    session: SessionId
    sequence: Sequence
    tick: Tick
    events: list[WorldEvent]
    story: StoryState | None = None
    hooks: list[str] = []


class InputsApplied(Message, tag="inputs.applied", kw_only=True, frozen=True):
    """Every input the worker applied since its last report, of all its sessions, in the order applied: one
    message (and one write on the platform) a tick, where a busy Live world made one for each input."""

    applied: list[SessionApplied]


class SessionMissing(Message, tag="session.missing", kw_only=True, frozen=True):
    """Reopen the session with the logged inputs after `after`, the last one applied."""

    session: SessionId
    after: Sequence


class SessionSnapshot(Message, tag="session.snapshot", kw_only=True, frozen=True):
    session: SessionId
    tick: Tick
    sequence: Sequence
    engine_state: bytes
    narrative: NarrativeState


class SessionNarration(Message, tag="session.narration", kw_only=True, omit_defaults=True, frozen=True):
    session: SessionId
    text: Text
    viewer: Viewer | None = None  # for that browser only (see SessionOpen.viewer); else for all of them
    # Where the story stands, told again (a session reopened, a browser arriving): pages showing the story so far
    # have it already, and the platform keeps it once.
    retold: bool = False


class SessionChoices(Message, tag="session.choices", kw_only=True, omit_defaults=True, frozen=True):
    """The choices on offer at `beat` (none while they are being written)."""

    session: SessionId
    beat: Name
    choices: list[Text]
    ended: bool
    viewer: Viewer | None = None  # for that browser only (see SessionOpen.viewer); else for all of them


class SessionError(Message, tag="session.error", kw_only=True, omit_defaults=True, frozen=True):
    """A session's error, relayed to its browsers (with the input's `sequence` when an input caused it)."""

    session: SessionId | None
    error: Text
    sequence: Sequence | None = None


class SessionVotes(Message, tag="session.votes", kw_only=True, frozen=True):
    session: SessionId
    tally: list[int]
    closes_at_tick: Tick


class SessionCharacterLine(Message, tag="session.character_line", kw_only=True, frozen=True):
    """A reply, streamed a sentence at a time, then an empty `final` line."""

    session: SessionId
    character: Name
    text: Text
    final: bool


class SessionDebugPrompt(Message, tag="session.debug_prompt", kw_only=True, frozen=True):
    """The prompt a reply was written from, relayed to the world's creator only."""

    session: SessionId
    character: Name
    sections: dict[str, Annotated[str, msgspec.Meta(max_length=MAX_PROMPT_LENGTH)]]
    messages: list[dict[str, Annotated[str, msgspec.Meta(max_length=MAX_PROMPT_LENGTH)]]]


class SessionRecall(Message, tag="session.recall", kw_only=True, frozen=True):
    """Ask for a character's memories of `speaker` (None: the owner) nearest `query`, an embedding."""

    request: RequestNumber
    session: SessionId
    character: int | None  # the platform's character id; None: a character that remembers nothing
    speaker: Name | None
    query: bytes
    recent: list[Text]


class SessionExchange(Message, tag="session.exchange", kw_only=True, frozen=True):
    """A finished exchange with a character, and what the player told it to remember."""

    session: SessionId
    sequence: Sequence
    character: int | None
    speaker: Name | None
    said: Text
    reply: Text
    memories: list[ToldMemory]


class SessionPropose(Message, tag="session.propose", kw_only=True, frozen=True):
    session: SessionId
    input: Offer | HookOutcome | OwnChoice


class SessionBlocked(Message, tag="session.blocked", kw_only=True, frozen=True):
    """Generated text the safety filter refused, for the moderators."""

    session: SessionId
    character: Name
    text: Text
    terms: list[str]


PlatformToWorker = (
    PlatformWelcome
    | PlatformError
    | SessionOpen
    | SessionInput
    | SessionClose
    | SessionRefresh
    | SessionKeyFrame
    | SessionRecalled
)
WorkerToPlatform = (
    WorkerHello
    | WorkerHeartbeat
    | SessionOpened
    | InputsApplied
    | SessionMissing
    | SessionSnapshot
    | SessionNarration
    | SessionChoices
    | SessionError
    | SessionVotes
    | SessionCharacterLine
    | SessionDebugPrompt
    | SessionRecall
    | SessionExchange
    | SessionPropose
    | SessionBlocked
)
# What a session's host answers: the messages above, and applied inputs, which the worker reports a tick at a time
# (InputsApplied).
WorkerReply = WorkerToPlatform | SessionApplied
_platform_decoder = msgspec.json.Decoder(PlatformToWorker)
_worker_decoder = msgspec.json.Decoder(WorkerToPlatform)


def type_of(message: Message) -> str:
    """A message's `type` on the wire."""
    return str(message.__struct_config__.tag)


def encode(message: Message) -> str:
    """The message as compact JSON."""
    return msgspec.json.encode(message).decode()


def decode_from_platform(text: str | bytes | None) -> PlatformToWorker:
    """A message the platform sent a worker, or ProtocolError naming what is wrong with it."""
    return _decoded(_platform_decoder, text)


def decode_from_worker(text: str | bytes | None) -> WorkerToPlatform:
    """A message a worker sent the platform, or ProtocolError naming what is wrong with it."""
    return _decoded(_worker_decoder, text)


def _decoded(decoder: msgspec.json.Decoder[Any], text: str | bytes | None) -> Any:
    if text is None:
        raise ProtocolError("binary messages other than frames are not part of the worker protocol")
    try:
        return decoder.decode(text)
    except msgspec.ValidationError as error:  # its text names the field and what it expected
        unknown = re.fullmatch(r"Invalid value (.*) - at `\$\.type`", str(error))
        raise ProtocolError(
            f"unknown message type {unknown.group(1)}" if unknown else f"message refused: {error}"
        ) from None
    except msgspec.DecodeError as error:
        raise ProtocolError(f"message is not valid JSON ({error})") from None


class FrameHeader(NamedTuple):
    """What a worker's binary frame says of itself; its picture follows the header."""

    session: str
    number: int
    sequence: int  # the last applied input's
    codec: str  # one of FRAME_CODECS
    key: bool


def frame_encode(*, session: str, number: int, sequence: int, codec: str, key: bool, picture: bytes) -> bytes:
    flags = KEY_FRAME_FLAG if key else 0
    header = WORKER_FRAME_HEADER.pack(session_id_bytes(session), number, sequence, FRAME_CODECS.index(codec), flags)
    return header + picture


@functools.lru_cache(maxsize=4096)
def session_id_bytes(session: str) -> bytes:
    """A session id as a frame header carries it: parsed once per session, not once per frame."""
    return uuid.UUID(session).bytes


def frame_decode(data: bytes) -> FrameHeader:
    """The header of a worker's binary frame, checked; its picture follows it (the platform relays everything
    after the session id as it came, see SESSION_ID_BYTES)."""
    if len(data) <= WORKER_FRAME_HEADER.size:
        raise ProtocolError("a frame needs its header and a picture")
    session, number, sequence, codec, flags = WORKER_FRAME_HEADER.unpack_from(data)
    if codec >= len(FRAME_CODECS):
        raise ProtocolError(f"unknown frame codec {codec}; known: {', '.join(FRAME_CODECS)}")
    if flags & ~KEY_FRAME_FLAG:
        raise ProtocolError(f"unknown frame flags {flags:#04x}")
    key = bool(flags & KEY_FRAME_FLAG)
    if FRAME_CODECS[codec] == "jpeg" and not key:
        raise ProtocolError("a JPEG frame is always a key frame")
    return FrameHeader(str(uuid.UUID(bytes=session)), number, sequence, FRAME_CODECS[codec], key)


def type_named(text: str | bytes | None) -> str | None:
    """The `type` a refused message claimed, when it was a JSON object with one: a refusal names it."""
    try:
        claimed = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    kind = claimed.get("type") if isinstance(claimed, dict) else None
    return kind[:MAX_NAME_LENGTH] if isinstance(kind, str) else None
