"""The worker protocol's checks, which both the platform and the worker rely on."""

from __future__ import annotations

import pytest

from inference import protocol


def test_a_hello_round_trips() -> None:
    message = protocol.hello_message(engines=["raycaster"], slots=4, free_slots=4, device="cpu")
    hello = protocol.parse_hello(protocol.decode(protocol.encode(message)))
    assert hello == protocol.WorkerHello(engines=["raycaster"], slots=4, free_slots=4, device="cpu")


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"protocol": 99}, "unsupported protocol"),
        ({"engines": [""]}, "engines"),
        ({"slots": True}, "slots"),
        ({"slots": -1}, "slots"),
        ({"free_slots": 5}, "cannot exceed"),
        ({"device": "x" * 101}, "device"),
    ],
)
def test_a_bad_hello_is_refused_with_a_reason(change: dict[str, object], complaint: str) -> None:
    message = protocol.hello_message(engines=["raycaster"], slots=4, free_slots=4, device="cpu") | change
    with pytest.raises(protocol.ProtocolError, match=complaint):
        protocol.parse_hello(message)


@pytest.mark.parametrize("text", ["", "[]", '{"type": 3}', "null", '"worker.hello"'])
def test_messages_without_a_type_are_refused(text: str) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(text)
