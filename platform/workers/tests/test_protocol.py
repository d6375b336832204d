"""The worker protocol's checks at the platform's edge: what a worker's hello must be."""

from __future__ import annotations

import json

import pytest

from inference import protocol

HELLO = protocol.WorkerHello(engines=["raycaster"], slots=4, free_slots=4, device="cpu")


def test_a_hello_round_trips() -> None:
    assert protocol.decode_from_worker(protocol.encode(HELLO)) == HELLO


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"protocol": 99}, "unsupported protocol"),
        ({"engines": [""]}, "engines"),
        ({"slots": True}, "slots"),
        ({"slots": -1}, "slots"),
        ({"free_slots": 5}, "cannot exceed"),
        ({"device": "x" * 101}, "device"),
        (
            {
                "engine_facts": {
                    "raycaster": {"device": "cpu", "width": 8, "height": 8, "frames_per_second": 20, "codec": "av1"}
                }
            },
            "codec",
        ),
    ],
)
def test_a_bad_hello_is_refused_with_a_reason(change: dict[str, object], complaint: str) -> None:
    text = json.dumps(json.loads(protocol.encode(HELLO)) | change)
    with pytest.raises(protocol.ProtocolError, match=complaint):
        protocol.decode_from_worker(text)


@pytest.mark.parametrize("text", ["", "[]", '{"type": 3}', "null", '"worker.hello"'])
def test_messages_without_a_type_are_refused(text: str) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_from_worker(text)
