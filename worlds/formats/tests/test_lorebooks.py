"""Lorebooks in their three shapes: character_book, lorebook_v3 and SillyTavern World Info."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from worlds.formats import (
    FormatError,
    Lorebook,
    LoreEntry,
    detect_lorebook,
    lorebook_from_character_book,
    lorebook_from_v3,
    lorebook_from_world_info,
    lorebook_to_character_book,
    lorebook_to_v3,
    lorebook_to_world_info,
)


def test_world_info_entries_map_onto_lore_entries(fixture_bytes: Callable[[str], bytes]) -> None:
    book = lorebook_from_world_info(fixture_bytes("saltmarsh_world_info.json"), name="Saltmarsh Light")
    assert book.name == "Saltmarsh Light"
    assert [entry.id for entry in book.entries] == [0, 1, 2, 5, 7]
    causeway, landlord, brine, wreck, old_notes = book.entries
    assert causeway.keys == ("causeway", "tide")
    assert causeway.secondary_keys == ("cross", "walk")
    assert causeway.selective is True
    assert causeway.insertion_order == 100
    assert landlord.selective_logic == "not_any"
    assert landlord.position == "after_char"
    assert brine.position == "at_depth"
    assert brine.case_sensitive is True
    assert brine.match_whole_words is True
    assert brine.exclude_recursion is True
    assert wreck.probability == 50
    assert wreck.keys == ("/wreck(s|ed)?/i",)
    assert old_notes.enabled is False


def test_world_info_settings_without_a_field_become_extensions_named_as_sillytavern_does(
    fixture_bytes: Callable[[str], bytes],
) -> None:
    brine = lorebook_from_world_info(fixture_bytes("saltmarsh_world_info.json")).entries[2]
    assert brine.extensions["group"] == "places"
    assert brine.extensions["display_index"] == 2
    assert brine.extensions["group_override"] is False
    assert brine.extensions["depth"] == 2
    assert brine.extensions["triggers"] == []  # unknown to us: kept under its own name
    assert "groupOverride" not in brine.extensions


def test_world_info_round_trips(fixture_bytes: Callable[[str], bytes]) -> None:
    book = lorebook_from_world_info(fixture_bytes("saltmarsh_world_info.json"))
    assert lorebook_from_world_info(lorebook_to_world_info(book)) == book


def test_world_info_written_keeps_every_field_sillytavern_wrote(fixture_bytes: Callable[[str], bytes]) -> None:
    original = json.loads(fixture_bytes("saltmarsh_world_info.json"))
    written = json.loads(lorebook_to_world_info(lorebook_from_world_info(json.dumps(original))))
    assert written == original


def test_lorebook_v3_reads_book_settings_and_entries(fixture_bytes: Callable[[str], bytes]) -> None:
    book = lorebook_from_v3(fixture_bytes("saltmarsh_lorebook_v3.json"))
    assert (book.name, book.scan_depth, book.token_budget, book.recursive_scanning) == ("Saltmarsh Light", 3, 300, True)
    assert book.extensions == {"x_editor": {"collapsed": [2]}}
    lighthouse, causeway, brine = book.entries
    assert lighthouse.priority == 5
    assert lighthouse.name == "lighthouse"
    assert lighthouse.case_sensitive is False
    assert causeway.secondary_keys == ("flood", "tide")
    assert causeway.extensions == {"x_worldloom_fixture": "kept"}
    assert brine.position == "after_char"
    assert brine.unknown == {"x_unknown_entry_field": 7}


def test_lorebook_v3_round_trips_with_unknown_fields(fixture_bytes: Callable[[str], bytes]) -> None:
    book = lorebook_from_v3(fixture_bytes("saltmarsh_lorebook_v3.json"))
    written = lorebook_to_v3(book)
    assert lorebook_from_v3(written) == book
    assert json.loads(written)["data"]["entries"][2]["x_unknown_entry_field"] == 7


def test_a_character_book_round_trips_through_its_dict() -> None:
    book = Lorebook(
        name="Saltmarsh",
        entries=[
            LoreEntry(keys=["fog"], content="Horn every thirty seconds.", position="at_depth", priority=3),
            LoreEntry(keys=["tide"], content="Twice a day.", selective_logic="and_all", id="tide-1"),
        ],
    )
    assert lorebook_from_character_book(lorebook_to_character_book(book)) == book


def test_converting_world_info_to_a_card_book_and_back_loses_nothing(fixture_bytes: Callable[[str], bytes]) -> None:
    book = lorebook_from_world_info(fixture_bytes("saltmarsh_world_info.json"))
    assert lorebook_from_character_book(lorebook_to_character_book(book)) == book
    assert (
        lorebook_from_world_info(lorebook_to_world_info(lorebook_from_character_book(lorebook_to_character_book(book))))
        == book
    )


def test_a_card_book_written_for_sillytavern_carries_its_settings_in_extensions() -> None:
    entry = LoreEntry(
        keys=["Brine"],
        content="A village.",
        position="at_depth",
        selective_logic="not_all",
        case_sensitive=True,
        prevent_recursion=True,
    )
    written = lorebook_to_character_book(Lorebook(entries=[entry]))["entries"][0]
    assert written["position"] == "after_char"
    assert written["case_sensitive"] is True
    assert written["extensions"]["position"] == 4
    assert written["extensions"]["selectiveLogic"] == 1
    assert written["extensions"]["case_sensitive"] is True
    assert written["extensions"]["prevent_recursion"] is True


def test_card_book_entries_with_string_ids_get_integer_uids_in_world_info() -> None:
    book = Lorebook(entries=[LoreEntry(keys=["a"], content="A", id="x"), LoreEntry(keys=["b"], content="B", id=0)])
    written = json.loads(lorebook_to_world_info(book))
    assert sorted(written["entries"]) == ["0", "1"]
    assert written["entries"]["0"]["key"] == ["b"]


def test_detect_lorebook_tells_world_info_from_lorebook_v3(fixture_bytes: Callable[[str], bytes]) -> None:
    assert detect_lorebook(fixture_bytes("saltmarsh_world_info.json")) == "world-info"
    assert detect_lorebook(fixture_bytes("saltmarsh_lorebook_v3.json")) == "lorebook-v3"
    with pytest.raises(FormatError, match="neither SillyTavern World Info"):
        detect_lorebook(b'{"spec": "chara_card_v2", "data": {"name": "Eve"}}')


def test_lorebook_v3_with_the_wrong_spec_is_refused() -> None:
    with pytest.raises(FormatError) as raised:
        lorebook_from_v3(b'{"spec": "chara_card_v3", "data": {"entries": []}}')
    assert str(raised.value) == "lorebook-v3: spec: must be 'lorebook_v3', not 'chara_card_v3'"


def test_an_unknown_selective_logic_names_the_entry() -> None:
    with pytest.raises(FormatError) as raised:
        lorebook_from_world_info(b'{"entries": {"4": {"key": ["fog"], "content": "x", "selectiveLogic": 9}}}')
    assert raised.value.where == "entries.4.selectiveLogic"


def test_an_unknown_position_is_refused() -> None:
    with pytest.raises(FormatError, match=r"entries\[0\].position: must be 'before_char' or 'after_char'"):
        lorebook_from_character_book({"entries": [{"keys": ["a"], "content": "b", "position": "middle"}]})


def test_keys_that_are_not_strings_are_refused_with_their_path() -> None:
    with pytest.raises(FormatError) as raised:
        lorebook_from_v3(b'{"spec": "lorebook_v3", "data": {"entries": [{"keys": "fog", "content": "x"}]}}')
    assert str(raised.value) == "lorebook-v3: data.entries[0].keys: must be a list of strings"


def test_a_book_without_entries_is_refused() -> None:
    with pytest.raises(FormatError, match="entries: is missing"):
        lorebook_from_character_book({"name": "Empty"})
    with pytest.raises(FormatError, match="entries: is missing"):
        lorebook_from_world_info(b'{"name": "Empty"}')


def test_an_absurd_number_of_entries_is_refused() -> None:
    entries = {str(uid): {"key": ["k"], "content": "c"} for uid in range(5_001)}
    with pytest.raises(FormatError, match="5001 entries, over the limit of 5000"):
        lorebook_from_world_info(json.dumps({"entries": entries}))
    with pytest.raises(FormatError, match="5001 items, over the limit of 5000"):
        lorebook_from_character_book({"entries": [{"keys": ["k"], "content": "c"}] * 5_001})


def test_a_probability_outside_a_percentage_is_refused() -> None:
    with pytest.raises(FormatError, match="probability: must be a percentage"):
        lorebook_from_world_info(b'{"entries": {"0": {"key": ["k"], "content": "c", "probability": 150}}}')


def test_lore_entries_built_with_lists_equal_those_read_from_files() -> None:
    assert LoreEntry(keys=["a"], content="b") == LoreEntry(keys=("a",), content="b")
    with pytest.raises(ValueError, match="selective_logic"):
        LoreEntry(keys=["a"], content="b", selective_logic="sometimes")
