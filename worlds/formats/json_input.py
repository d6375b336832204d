"""Reading untrusted JSON: size and nesting limits, and typed field access whose errors name the field path.

Every JSON format here (character cards, World Info, lorebook_v3, Twee's StoryData) reads its file through
`load_json` and its objects through `JsonObject`, so a wrong type anywhere reads the same way:
`card-json: data.character_book.entries[3].keys: must be a list of strings`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from worlds.formats.errors import FormatError
from worlds.formats.limits import MAX_JSON_BYTES, MAX_JSON_DEPTH, check_size

NUL_REFUSED = "holds a NUL character (U+0000), which no text field can store"


def decode_utf8(data: bytes | str, format_name: str) -> str:
    """The text of `data`, which must be UTF-8; a leading byte order mark (Windows editors write one) is dropped."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise FormatError(format_name, f"byte {error.start}", "not valid UTF-8 text") from error
    if "\x00" in data:
        raise FormatError(format_name, f"character {data.index(chr(0))}", NUL_REFUSED)
    return data.removeprefix("\ufeff")


def _refuse_constant(name: str) -> None:
    # NaN and Infinity are not JSON, and NaN != NaN would break every round trip that compares values.
    raise ValueError(f"{name} is not valid JSON")


def load_json(
    data: bytes | str, format_name: str, *, where: str = "", first_line: int = 1, max_bytes: int = MAX_JSON_BYTES
) -> Any:
    """Parse JSON text under the size and nesting limits; a syntax error names its line and column, counting
    lines from `first_line` when the JSON sits inside a larger file."""
    check_size(data, max_bytes, format_name)
    text = decode_utf8(data, format_name)
    prefix = f"{where}: " if where else ""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise FormatError(
            format_name,
            f"{prefix}line {error.lineno + first_line - 1} column {error.colno}",
            f"invalid JSON: {error.msg}",
        ) from error
    except ValueError as error:
        raise FormatError(format_name, where, str(error)) from error
    except RecursionError as error:
        raise FormatError(format_name, where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from error
    _check_structure(value, format_name, where)
    return value


def _check_structure(value: Any, format_name: str, where: str) -> None:
    """Nesting within MAX_JSON_DEPTH, and no NUL character (U+0000) in a key or a string, which PostgreSQL's
    text and jsonb cannot hold: an escaped NUL would otherwise fail at the database, a 500, not a refusal."""
    # Iterative, so checking a deep document cannot itself hit the recursion limit.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            raise FormatError(format_name, where, NUL_REFUSED)
        if isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise FormatError(format_name, where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def dump_json(value: Any, *, pretty: bool) -> str:
    """JSON text as the tools we exchange files with write it: UTF-8 characters kept, not \\u-escaped."""
    if pretty:
        return json.dumps(value, ensure_ascii=False, indent=2)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class JsonObject:
    """A JSON object from an untrusted file, read field by field with the field's path in every error.

    A missing field and an explicit `null` both give the default: exporters in the wild write either.
    """

    def __init__(self, value: Any, *, format_name: str, where: str) -> None:
        if not isinstance(value, dict):
            raise FormatError(format_name, where or "top level", "must be a JSON object")
        self.value: dict[str, Any] = value
        self.format_name = format_name
        self.where = where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> FormatError:
        return FormatError(self.format_name, self.path(key), message)

    def has(self, key: str) -> bool:
        return self.value.get(key) is not None

    def text(self, key: str, default: str = "") -> str:
        value = self.optional_text(key)
        return default if value is None else value

    def optional_text(self, key: str) -> str | None:
        value = self.value.get(key)
        if value is not None and not isinstance(value, str):
            raise self.error(key, "must be a string")
        return value

    def non_empty_text(self, key: str) -> str:
        value = self.value.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, "must be a non-empty string")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.optional_texts(key)
        return () if value is None else value

    def optional_texts(self, key: str) -> tuple[str, ...] | None:
        value = self.value.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.error(key, "must be a list of strings")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise FormatError(self.format_name, f"{self.path(key)}[{index}]", "must be a string")
        return tuple(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.optional_flag(key)
        return default if value is None else value

    def optional_flag(self, key: str) -> bool | None:
        value = self.value.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.error(key, "must be true or false")
        return value

    def integer(self, key: str, default: int) -> int:
        value = self.optional_integer(key)
        return default if value is None else value

    def optional_integer(self, key: str) -> int | None:
        value = self.value.get(key)
        if value is None:
            return None
        # JavaScript writes every number as a float; 100.0 is the integer 100. True is not a number here.
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, "must be a whole number")
        return value

    def optional_number(self, key: str) -> int | float | None:
        value = self.value.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise self.error(key, "must be a number")
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.optional_mapping(key)
        return {} if value is None else value

    def optional_mapping(self, key: str) -> dict[str, Any] | None:
        value = self.value.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.error(key, "must be a JSON object")
        return value

    def child(self, key: str) -> JsonObject:
        return JsonObject(self.value.get(key), format_name=self.format_name, where=self.path(key))

    def children(self, key: str, *, limit: int) -> list[JsonObject]:
        """The objects in the list at `key`, refusing more than `limit` of them."""
        value = self.value.get(key)
        if not isinstance(value, list):
            raise self.error(key, "must be a list")
        if len(value) > limit:
            raise self.error(key, f"has {len(value)} items, over the limit of {limit}")
        return [
            JsonObject(item, format_name=self.format_name, where=f"{self.path(key)}[{index}]")
            for index, item in enumerate(value)
        ]

    def rest(self, known: Iterable[str]) -> dict[str, Any]:
        """The fields this format does not define, verbatim, so they survive a round trip."""
        known = set(known)
        return {key: value for key, value in self.value.items() if key not in known}
