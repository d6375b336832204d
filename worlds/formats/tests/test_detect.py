"""The format sniffer judges files by their content, never their name."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import pytest

from worlds.formats import FormatError, detect_format


@pytest.mark.parametrize(
    ("fixture", "detected"),
    [
        ("eve_card_v2.png", "card-png"),
        ("eve_card_v3.png", "card-png"),
        ("plain_portrait.png", "card-png"),  # a PNG: reading it then says it holds no card
        ("eve_card_v1.json", "card-json"),
        ("eve_card_v2.json", "card-json"),
        ("eve_card_v3.json", "card-json"),
        ("saltmarsh_world_info.json", "world-info"),
        ("saltmarsh_lorebook_v3.json", "lorebook-v3"),
        ("harbour_lights.twee", "twee"),
        ("broken_link.twee", "twee"),
    ],
)
def test_each_fixture_is_detected(fixture_bytes: Callable[[str], bytes], fixture: str, detected: str) -> None:
    assert detect_format(fixture_bytes(fixture)) == detected


def test_a_zip_is_a_cartridge() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", "{}")
    assert detect_format(buffer.getvalue()) == "cartridge"


def test_twee_with_leading_blank_lines_and_a_byte_order_mark_is_detected() -> None:
    assert detect_format("\ufeff\n\n:: StoryTitle\nHarbour\n".encode()) == "twee"


def test_a_card_json_with_an_unknown_spec_is_reported_by_its_spec() -> None:
    with pytest.raises(FormatError) as raised:
        detect_format(b'{"spec": "chara_card_v9", "data": {}}')
    assert str(raised.value) == "unknown: spec: 'chara_card_v9' is not a format we read"


def test_json_that_is_none_of_ours_is_unknown() -> None:
    with pytest.raises(FormatError, match="JSON, but not a character card"):
        detect_format(b'{"title": "a recipe"}')


def test_invalid_json_is_reported_with_line_and_column() -> None:
    with pytest.raises(FormatError, match="line 1 column 10: invalid JSON"):
        detect_format(b'{"name": }')


@pytest.mark.parametrize("data", [b"GIF89a....", b"plain words", b"", b"\xff\xfe\x00binary"])
def test_anything_else_is_unknown(data: bytes) -> None:
    with pytest.raises(FormatError) as raised:
        detect_format(data)
    assert raised.value.format == "unknown"
