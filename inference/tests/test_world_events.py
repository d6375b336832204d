"""The world events vocabulary: parsing, validation, and its documentation."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.world import events
from inference.world.events import EVENT_KINDS, EVENT_NARRATIONS, OBJECT_KINDS, WorldEvent, narration, parse_event


def test_it_parses_each_kind_of_event() -> None:
    assert parse_event({"kind": "night"}) == WorldEvent(kind="night")
    assert parse_event({"kind": "spawn", "object": "tower", "color": [1, 2, 3]}) == WorldEvent(
        kind="spawn", object="tower", color=(1, 2, 3)
    )
    assert parse_event({"kind": "join", "name": "ana"}) == WorldEvent(kind="join", name="ana")
    assert parse_event({"kind": "move", "name": "ana", "action": 5}).action == 5
    assert parse_event({"kind": "leave", "name": "ana"}).name == "ana"
    assert parse_event({"kind": "approach", "name": "Eve"}) == WorldEvent(kind="approach", name="Eve")


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"kind": "earthquake"}, "unknown event kind 'earthquake'"),
        ("night", "an event must be a dict"),
        ({"kind": "night", "object": "tower"}, "a 'night' event does not take object"),
        ({"kind": "spawn"}, "a 'spawn' event needs an 'object' among"),
        ({"kind": "spawn", "object": "dragon"}, "a 'spawn' event needs an 'object' among"),
        ({"kind": "spawn", "object": "tree", "color": [1, 2]}, r"color must be \[r, g, b\]"),
        ({"kind": "join", "name": ""}, "needs a 'name' of 1..150 characters"),
        ({"kind": "move", "name": "ana", "action": 64}, "needs an 'action' bitmask 0..63"),
    ],
)
def test_it_rejects_a_bad_event_with_a_clear_message(event: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_event(event)  # type: ignore[arg-type]


def test_every_event_and_object_kind_is_documented_in_both_tables() -> None:
    table = (Path(events.__file__).parent / "EVENTS.md").read_text()
    docstring = events.__doc__ or ""

    for kind in EVENT_KINDS:
        assert f'{{"kind": "{kind}"' in table
        assert f'{{"kind": "{kind}"' in docstring
    for kind in OBJECT_KINDS:
        assert kind in table
        assert kind in docstring


def test_every_event_kind_has_its_words_and_a_change_is_told_by_what_it_is() -> None:
    assert set(EVENT_NARRATIONS) == set(EVENT_KINDS)
    assert narration([{"kind": "night"}, {"kind": "snow"}]) == "Night falls. Snow begins to fall."
    assert narration([{"kind": "spawn", "object": "lantern", "color": [1, 2, 3]}]) == "A lantern appears."
    assert narration([{"kind": "clear"}, {"kind": "clear"}]) == "The sky clears."
    assert narration([{"kind": "clear", "object": "snow"}]) == "The snow stops."
    assert narration([{"kind": "clear", "object": "fog"}]) == "The fog lifts."
    assert narration([{"kind": "move", "name": "ana", "action": 1}]) == ""
