"""FormatError's one-line message, and the limits every reader enforces before trusting a file."""

from __future__ import annotations

import pytest

from worlds.formats import FormatError
from worlds.formats.json_input import JsonObject, load_json
from worlds.formats.limits import MAX_JSON_BYTES, MAX_JSON_DEPTH


def test_format_error_reads_as_one_line_with_format_place_and_message() -> None:
    error = FormatError("card-json", "data.name", "must be a non-empty string")
    assert str(error) == "card-json: data.name: must be a non-empty string"
    assert (error.format, error.where, error.message) == ("card-json", "data.name", "must be a non-empty string")
    assert isinstance(error, ValueError)


def test_format_error_without_a_place_leaves_it_out() -> None:
    assert str(FormatError("twee", "", "no passages")) == "twee: no passages"


def test_invalid_json_names_its_line_and_column() -> None:
    with pytest.raises(FormatError) as raised:
        load_json(b'{\n  "name": "Eve",\n  "tags": [1 2]\n}', "card-json")
    assert raised.value.where == "line 3 column 14"
    assert str(raised.value) == "card-json: line 3 column 14: invalid JSON: Expecting ',' delimiter"


def test_json_over_the_size_limit_is_refused_before_parsing() -> None:
    oversized = b'{"name": "' + b"x" * MAX_JSON_BYTES + b'"}'
    with pytest.raises(FormatError, match="over the limit of 2097152 bytes"):
        load_json(oversized, "card-json")


def test_deeply_nested_json_is_refused() -> None:
    nested = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(FormatError, match="nested deeper than 64 levels"):
        load_json(nested, "world-info")


def test_nesting_bomb_beyond_the_parser_recursion_limit_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="nested deeper"):
        load_json("[" * 100_000 + "]" * 100_000, "world-info")


def test_nan_is_not_json() -> None:
    with pytest.raises(FormatError, match="NaN is not valid JSON"):
        load_json('{"zoom": NaN}', "twee")


def test_text_that_is_not_utf8_is_refused_with_its_byte_offset() -> None:
    with pytest.raises(FormatError) as raised:
        load_json(b'{"name": "\xff"}', "card-json")
    assert str(raised.value) == "card-json: byte 10: not valid UTF-8 text"


def test_a_byte_order_mark_is_ignored() -> None:
    assert load_json("\ufeff{}".encode(), "card-json") == {}


def test_fields_of_the_wrong_type_name_their_path() -> None:
    entry = JsonObject({"keys": ["fog", 3]}, format_name="card-json", where="data.character_book.entries[3]")
    with pytest.raises(FormatError) as raised:
        entry.texts("keys")
    assert str(raised.value) == "card-json: data.character_book.entries[3].keys[1]: must be a string"


def test_javascript_whole_floats_read_as_integers_but_fractions_do_not() -> None:
    entry = JsonObject({"order": 100.0, "depth": 2.5, "flag": True}, format_name="world-info", where="")
    assert entry.integer("order", default=0) == 100
    with pytest.raises(FormatError, match="depth: must be a whole number"):
        entry.integer("depth", default=0)
    with pytest.raises(FormatError, match="flag: must be a whole number"):
        entry.integer("flag", default=0)


def test_lists_over_their_limit_are_refused() -> None:
    book = JsonObject({"entries": [{}] * 11}, format_name="character-book", where="")
    with pytest.raises(FormatError, match="entries: has 11 items, over the limit of 10"):
        book.children("entries", limit=10)


@pytest.mark.parametrize(
    "text", ['{"name": "a\\u0000b"}', '{"a\\u0000": 1}', '["ok", ["\\u0000"]]', '{"name": "a\x00b"}']
)
def test_a_nul_character_is_refused_by_name_before_it_reaches_the_database(text: str) -> None:
    with pytest.raises(FormatError, match="NUL character"):
        load_json(text, "lorebook")
