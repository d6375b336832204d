"""The edge of the play protocol: what `play.protocol.parse` lets through from a browser, over random messages."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference import protocol as worker_protocol
from play import protocol

# Values a browser (or an attacker) can put in any field: every JSON type, and numbers around each bound.
ANY_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, 1, 99, 100, 2**31 - 1, 2**31, 2**32 - 1, 2**32, -1])
    | st.floats(allow_nan=False)
    | st.text(max_size=60)
    | st.sampled_from(["", " ", "\x00", "\ud800", "KeyW", "x" * 1001]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=6,
)
FIELDS = ("seq", "frame", "key", "text", "index", "character")
MESSAGES = st.fixed_dictionaries(
    {"type": st.sampled_from(["ack", *protocol.INPUT_TYPES]) | ANY_VALUE},
    optional={field: ANY_VALUE for field in FIELDS},
)


def the_text_sent(message: Any) -> str:
    return json.dumps(message)


def parsed_or_refused(text: str) -> protocol.FromBrowserMessage | None:
    try:
        return protocol.parse(text, len(text.encode("utf-8", "surrogatepass")))
    except protocol.PlayProtocolError:
        return None


def storable(text: str) -> bool:
    """What PostgreSQL's text and JSON columns take: valid UTF-8 without NUL."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


@settings(max_examples=600, deadline=None)
@given(message=MESSAGES)
def test_a_parsed_message_holds_only_values_the_database_and_worker_take(message: dict[str, Any]) -> None:
    parsed = parsed_or_refused(the_text_sent(message))
    if isinstance(parsed, protocol.Ack):
        assert 0 <= parsed.frame <= protocol.MAX_FRAME
    elif isinstance(parsed, protocol.BrowserInput):
        assert 1 <= parsed.seq <= protocol.MAX_SEQ
        payload = parsed.payload()
        assert payload["type"] == message["type"] in protocol.INPUT_TYPES
        if "index" in payload:
            assert type(payload["index"]) is int and 0 <= payload["index"] <= protocol.MAX_CHOICE_INDEX
        for field, longest in (("text", protocol.MAX_TEXT_LENGTH), ("character", protocol.MAX_CHARACTER_NAME_LENGTH)):
            if field in payload:
                assert 1 <= len(payload[field]) <= longest and storable(payload[field])
        if "key" in payload:
            assert payload["key"] in protocol.KEYS


def read_by(reader: Any, text: str) -> protocol.FromBrowserMessage | str:
    try:
        return reader(text)
    except protocol.PlayProtocolError as error:
        return f"refused: {error}"


@settings(max_examples=1500, deadline=None)
@given(
    text=MESSAGES.map(the_text_sent)
    | MESSAGES.map(lambda message: json.dumps(message, indent=1) + " ")
    | st.builds(
        lambda message, tail: the_text_sent(message)[:-1] + tail,
        MESSAGES,
        st.sampled_from(
            [
                ', "seq": 1}',
                ', "type": "ack"}',
                ', "frame": 1e2}',
                ', "seq": 1.0}',
                ', "frame": NaN}',
                "}}",
                "} x",
                ', "text": "\\ud800"}',
                ', "text": "\\u0000"}',
                ', "\\ud800": 1}',
                ', "seq": 00}',
                ', "seq": -0}',
            ]
        ),
    )
)
def test_the_fast_decoder_reads_every_message_as_the_standard_parser_does(text: str) -> None:
    fast = read_by(lambda sent: protocol.parse(sent, 0), text)
    assert fast == read_by(protocol.message_read_for_refusal, text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200) | st.builds(lambda depth: "[" * depth + "]" * depth, st.integers(0, 2048)))
def test_any_text_at_all_is_parsed_or_refused_never_raised(text: str) -> None:
    parsed_or_refused(text)  # anything but PlayProtocolError escapes and fails the test


def test_a_seq_past_the_logs_column_is_refused_at_the_edge() -> None:
    for sequence in (2**31, 2**32 - 1, 2**40):
        assert parsed_or_refused(json.dumps({"type": "pause", "seq": sequence})) is None
    assert parsed_or_refused(json.dumps({"type": "pause", "seq": 2**31 - 1})) is not None


def documented_browser_messages() -> dict[str, tuple[set[str], set[str]]]:
    """PROTOCOL.md's table of platform → browser messages: type -> (required fields, optional fields)."""
    document = (Path(protocol.__file__).parent / "PROTOCOL.md").read_text()
    table = document[document.index("- **JSON messages**") :].split("\n\n")[1]
    documented = {}
    for row in table.splitlines()[2:]:
        kind, field_list = (cell.strip() for cell in row.strip("|").split("|")[:2])
        required, _, optional = field_list.partition("optional")
        documented[kind.strip("`")] = (set(re.findall(r"`(\w+)`", required)), set(re.findall(r"`(\w+)`", optional)))
    return documented


def test_protocol_md_names_every_browser_message_with_its_fields_as_defined() -> None:
    defined = {
        kind: (
            {field.name for field in msgspec.structs.fields(message) if field.required},
            {field.name for field in msgspec.structs.fields(message) if not field.required},
        )
        for kind, message in protocol.BROWSER_MESSAGES.items()
    }
    assert documented_browser_messages() == defined


@settings(max_examples=300, deadline=None)
@given(
    message=st.dictionaries(st.sampled_from(["type", "state", "text", "seq", "worker", "tick", "final"]), ANY_VALUE)
    | st.builds(
        lambda kind, rest: {"type": kind, **rest},
        st.sampled_from(sorted(protocol.BROWSER_MESSAGES)),
        st.dictionaries(st.sampled_from(["state", "text", "seq", "worker", "tick", "final", "error"]), ANY_VALUE),
    )
)
def test_a_message_for_browsers_is_one_the_protocol_defines_or_refused(message: dict[str, Any]) -> None:
    try:
        checked = protocol.browser_message(message)
    except protocol.PlayProtocolError:
        return
    assert checked.as_builtins() == {key: value for key, value in message.items() if value is not None}


WORKER_MESSAGES = [
    worker_protocol.SessionOpened(session="s", tick=12),
    worker_protocol.SessionNarration(session="s", text="A hall with two doors."),
    worker_protocol.SessionChoices(session="s", beat="hall", choices=["left", "right"], ended=False),
    worker_protocol.SessionVotes(session="s", tally=[1, 0], closes_at_tick=200),
    worker_protocol.SessionCharacterLine(session="s", character="Mara", text="Hello.", final=False),
    worker_protocol.SessionCharacterLine(session="s", character="Mara", text="", final=True),
    worker_protocol.SessionError(session="s", sequence=4, error="there is no choice 7"),
]


def test_what_a_worker_sends_for_browsers_is_translated_to_the_documented_messages() -> None:
    relayed = [protocol.from_worker(message, worker="gpu-1").as_builtins() for message in WORKER_MESSAGES]
    assert relayed[0] == {"type": "status", "state": "running", "worker": "gpu-1"}  # no undocumented tick
    assert relayed[-1] == {"type": "error", "error": "there is no choice 7", "sequence": 4}
    for message in relayed:
        assert protocol.browser_message(message).as_builtins() == message


def documented_inputs() -> dict[str, set[str]]:
    """PROTOCOL.md's table of browser → platform messages: type -> its fields."""
    document = (Path(protocol.__file__).parent / "PROTOCOL.md").read_text()
    table = document[document.index("## Browser → platform") :].split("\n\n")[1]
    documented = {}
    for row in table.splitlines()[2:]:
        kinds, field_list = (cell.strip() for cell in row.strip("|").split("|")[:2])
        names = {name for name in re.findall(r"`(\w+)`", field_list) if name not in protocol.KEYS}
        for kind in re.findall(r"`(\w+)`", kinds):
            documented[kind] = names
    return documented


def test_protocol_md_names_every_browser_input_with_its_fields_as_defined() -> None:
    defined = {
        kind.__struct_config__.tag: {field.name for field in msgspec.structs.fields(kind)}
        for kind in (protocol.Ack, *protocol.BROWSER_INPUTS)
    }
    assert documented_inputs() == defined


def test_the_browser_inputs_defined_are_the_ones_a_session_applies() -> None:
    assert tuple(kind.__struct_config__.tag for kind in protocol.BROWSER_INPUTS) == protocol.INPUT_TYPES


@pytest.mark.parametrize(("codec", "key"), [("jpeg", True), ("h264", True), ("h264", False), ("vp8", False)])
def test_a_worker_frame_less_its_session_id_is_the_frame_browsers_read(codec: str, key: bool) -> None:
    session = uuid.uuid4()
    worker_frame = worker_protocol.frame_encode(
        session=str(session), number=7, sequence=3, codec=codec, key=key, picture=b"picture"
    )
    assert worker_frame[:26] == worker_protocol.WORKER_FRAME_HEADER.pack(
        session.bytes, 7, 3, worker_protocol.FRAME_CODECS.index(codec), int(key)
    )
    assert worker_protocol.frame_decode(worker_frame) == (str(session), 7, 3, codec, key)
    relayed = worker_frame[worker_protocol.SESSION_ID_BYTES :]
    assert protocol.BROWSER_FRAME_HEADER.size == 10
    assert protocol.BROWSER_FRAME_HEADER.unpack_from(relayed) == (7, 3, worker_protocol.FRAME_CODECS.index(codec), key)
    assert relayed[protocol.BROWSER_FRAME_HEADER.size :] == b"picture"


@pytest.mark.parametrize(
    ("codec", "flags", "refusal"),
    [(3, 1, "unknown frame codec 3"), (1, 2, "unknown frame flags 0x02"), (0, 0, "a JPEG frame is always a key")],
)
def test_a_worker_frame_with_an_unknown_codec_or_flag_or_a_delta_jpeg_is_refused(
    codec: int, flags: int, refusal: str
) -> None:
    frame = worker_protocol.WORKER_FRAME_HEADER.pack(uuid.uuid4().bytes, 7, 3, codec, flags) + b"picture"
    with pytest.raises(worker_protocol.ProtocolError, match=refusal):
        worker_protocol.frame_decode(frame)
