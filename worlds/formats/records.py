"""What the format dataclasses share: lists given by callers are stored as tuples."""

from __future__ import annotations

from typing import Any


def store_as_tuples(record: Any, *field_names: str) -> None:
    """Turn the named sequence fields of a frozen dataclass into tuples, so a record built with lists from
    a caller equals the same record read from a file."""
    for name in field_names:
        value = getattr(record, name)
        if value is not None and not isinstance(value, tuple):
            object.__setattr__(record, name, tuple(value))
