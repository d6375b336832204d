"""The worker protocol's typed messages: every one round-trips, anything else is refused with ProtocolError,
and no sender writes a message by hand."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference import protocol

ROOT = Path(__file__).resolve().parents[2]
# Folders whose senders must build the protocol's Structs: the worker, the platform's two ends and the benchmarks.
PROTOCOL_SENDER_FOLDERS = ["inference", "play", "platform/workers", "bench"]
# Every `type` of the worker protocol (the reports inputs.applied carries too); channel-layer events such as
# "session.message" are not among them.
MESSAGE_TYPES = sorted(
    str(message.__struct_config__.tag)
    for message in (*protocol.PlatformToWorker.__args__, *protocol.WorkerToPlatform.__args__, protocol.SessionApplied)
)


def hand_written_messages(folder: Path) -> list[str]:
    """`file:line` of each dict literal whose "type" is a protocol message's, outside inference/protocol.py and
    tests (which write malformed messages on purpose)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if path == ROOT / "inference" / "protocol.py" or {".venv", "tests"} & set(path.relative_to(folder).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "type"
                    and isinstance(value, ast.Constant)
                    and value.value in MESSAGE_TYPES
                ):
                    found.append(f"{path}:{node.lineno}")
    return found


@pytest.mark.parametrize("folder", PROTOCOL_SENDER_FOLDERS)
def test_no_sender_writes_a_protocol_message_by_hand(folder: str) -> None:
    assert hand_written_messages(ROOT / folder) == []


def test_the_walk_finds_a_message_written_by_hand(tmp_path: Path) -> None:
    (tmp_path / "sender.py").write_text(
        'message = {"type": "session.applied", "session": "s"}\n'
        'channel_layer_event = {"type": "session.message", "message": {}}\n'
    )
    assert hand_written_messages(tmp_path) == [f"{tmp_path / 'sender.py'}:1"]


def struct_strategy(kind: type[msgspec.Struct]) -> st.SearchStrategy[msgspec.Struct]:
    return st.builds(kind)


SESSION = st.text(min_size=1, max_size=64)
TEXT = st.text(max_size=50)
SEQUENCE = st.integers(0, protocol.MAX_SEQUENCE)
TICK = st.integers(0, protocol.MAX_TICK)
VIEWER = st.none() | st.text(min_size=1, max_size=512)
STORY = st.none() | st.builds(protocol.StoryState, beat=TEXT, flags=st.lists(TEXT, max_size=3), ended=st.booleans())
NARRATIVE = st.builds(
    protocol.NarrativeState,
    held_keys=st.lists(TEXT, max_size=3),
    paused=st.booleans(),
    story=STORY,
    votes=st.dictionaries(TEXT, st.integers(0, 9), max_size=3),
    active_hook=st.none() | TEXT,
)
PLAYER_INPUT = st.fixed_dictionaries({"type": st.sampled_from(["key_down", "prompt", "choice"]), "key": TEXT})
NAME = st.text(min_size=1, max_size=20)
MESSAGES = st.one_of(
    st.builds(protocol.PlatformWelcome, worker=NAME, heartbeat_seconds=st.floats(0.5, 60)),
    st.builds(protocol.PlatformError, error=TEXT, received_type=st.none() | TEXT),
    st.builds(
        protocol.SessionOpen,
        session=SESSION,
        engine=NAME,
        spec=st.dictionaries(TEXT, st.integers(), max_size=3),
        live=st.booleans(),
        snapshot=st.none()
        | st.builds(protocol.Snapshot, tick=TICK, sequence=SEQUENCE, engine_state=st.binary(), narrative=NARRATIVE),
        replay=st.lists(
            st.builds(protocol.ReplayedInput, sequence=SEQUENCE, tick=TICK, input=PLAYER_INPUT, story=STORY),
            max_size=3,
        ),
        pending=st.lists(st.builds(protocol.PendingInput, sequence=SEQUENCE, input=PLAYER_INPUT), max_size=3),
        target_tick=st.none() | TICK,
        viewer=VIEWER,
    ),
    st.builds(protocol.SessionInput, session=SESSION, sequence=SEQUENCE, input=PLAYER_INPUT),
    st.builds(protocol.SessionClose, session=SESSION),
    st.builds(protocol.SessionRefresh, session=SESSION),
    st.builds(protocol.SessionKeyFrame, session=SESSION),
    st.builds(
        protocol.SessionRecalled,
        session=SESSION,
        request=SEQUENCE,
        turn=st.integers(0, 100),
        memories=st.lists(TEXT, max_size=3),
        lore=st.lists(TEXT, max_size=3),
    ),
    st.builds(
        protocol.WorkerHello,
        engines=st.lists(NAME, max_size=3),
        slots=st.just(8),
        free_slots=st.integers(0, 8),
        device=TEXT,
    ),
    st.builds(protocol.WorkerHeartbeat, free_slots=st.integers(0, protocol.MAX_SLOTS)),
    st.builds(protocol.SessionOpened, session=SESSION, tick=TICK, viewer=VIEWER),
    st.builds(
        protocol.InputsApplied,
        applied=st.lists(
            st.builds(
                protocol.SessionApplied,
                session=SESSION,
                sequence=SEQUENCE,
                tick=TICK,
                events=st.lists(st.fixed_dictionaries({"kind": TEXT}), max_size=2),
                story=STORY,
                hooks=st.lists(TEXT, max_size=2),
            ),
            max_size=3,
        ),
    ),
    st.builds(protocol.SessionMissing, session=SESSION, after=SEQUENCE),
    st.builds(
        protocol.SessionSnapshot,
        session=SESSION,
        tick=TICK,
        sequence=SEQUENCE,
        engine_state=st.binary(),
        narrative=NARRATIVE,
    ),
    st.builds(protocol.SessionNarration, session=SESSION, text=TEXT, viewer=VIEWER),
    st.builds(
        protocol.SessionChoices, session=SESSION, beat=NAME, choices=st.lists(TEXT), ended=st.booleans(), viewer=VIEWER
    ),
    st.builds(protocol.SessionError, session=st.none() | SESSION, error=TEXT, sequence=st.none() | SEQUENCE),
    st.builds(protocol.SessionVotes, session=SESSION, tally=st.lists(st.integers(0, 50)), closes_at_tick=TICK),
    st.builds(protocol.SessionCharacterLine, session=SESSION, character=NAME, text=TEXT, final=st.booleans()),
    st.builds(
        protocol.SessionRecall,
        request=SEQUENCE,
        session=SESSION,
        character=st.none() | st.integers(1, 10**6),
        speaker=st.none() | NAME,
        query=st.binary(),
        recent=st.lists(TEXT, max_size=3),
    ),
    st.builds(
        protocol.SessionExchange,
        session=SESSION,
        sequence=SEQUENCE,
        character=st.none() | st.integers(1, 10**6),
        speaker=st.none() | NAME,
        said=TEXT,
        reply=TEXT,
        memories=st.lists(
            st.builds(protocol.ToldMemory, text=TEXT, importance=st.floats(0, 1), embedding=st.binary()), max_size=2
        ),
    ),
    st.builds(
        protocol.SessionPropose,
        session=SESSION,
        input=st.one_of(
            st.builds(
                protocol.Offer,
                beat=NAME,
                choices=st.lists(st.builds(protocol.OfferedChoice, text=TEXT, to=NAME)),
                source=NAME,
            ),
            st.builds(
                protocol.HookOutcome,
                hook=NAME,
                branch=st.none() | NAME,
                scores=st.just({"a": 0.5}),
                decided_by=NAME,
                narration=st.none() | TEXT,
            ),
            st.builds(protocol.OwnChoice, beat=NAME, index=st.integers(0, 9), text=TEXT),
        ),
    ),
    st.builds(protocol.SessionBlocked, session=SESSION, character=NAME, text=TEXT, terms=st.lists(TEXT, max_size=2)),
)


@given(MESSAGES)
def test_every_message_round_trips(message: protocol.Message) -> None:
    platform_to_worker = isinstance(message, protocol.PlatformToWorker.__args__)
    decode = protocol.decode_from_platform if platform_to_worker else protocol.decode_from_worker
    assert decode(protocol.encode(message)) == message


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
TYPED_JSON = st.builds(
    lambda kind, fields: {**fields, "type": kind},
    st.sampled_from(MESSAGE_TYPES),
    st.dictionaries(st.sampled_from(["session", "sequence", "tick", "input", "text", "error"]), JSON, max_size=4),
)


@given(JSON | TYPED_JSON)
def test_any_json_is_decoded_or_refused_with_a_protocol_error(value: object) -> None:
    text = json.dumps(value)
    for decode in (protocol.decode_from_platform, protocol.decode_from_worker):
        try:
            decode(text)
        except protocol.ProtocolError:
            pass


def test_a_refusal_names_the_problem() -> None:
    with pytest.raises(protocol.ProtocolError, match=r"\$\.sequence"):
        protocol.decode_from_platform('{"type": "session.input", "session": "s", "sequence": 2147483648, "input": {}}')
