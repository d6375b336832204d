"""Which format a file is in, judged from its content alone, never from its name."""

from __future__ import annotations

from worlds.formats.errors import FormatError
from worlds.formats.json_input import decode_utf8, load_json
from worlds.formats.lorebooks import lorebook_kind
from worlds.formats.png_chunks import PNG_SIGNATURE

ZIP_SIGNATURE = b"PK\x03\x04"
FORMATS = ("card-png", "card-json", "world-info", "lorebook-v3", "twee", "cartridge")
_CARD_SPECS = ("chara_card_v2", "chara_card_v3")
_V1_CARD_FIELDS = ("description", "personality", "scenario", "first_mes", "mes_example")


def detect_format(data: bytes) -> str:
    """One of FORMATS. Raises FormatError("unknown", ...) for anything else.

    Only the format is judged: a PNG is "card-png" even without a card chunk, and reading it says so.
    """
    if data.startswith(PNG_SIGNATURE):
        return "card-png"
    if data.startswith(ZIP_SIGNATURE):
        return "cartridge"
    try:
        text = decode_utf8(data, "unknown").lstrip()
    except FormatError as error:
        raise FormatError("unknown", "", "not a PNG, a zip, or UTF-8 text") from error
    if text.startswith("::"):
        return "twee"
    if text.startswith("{"):
        return _json_format(load_json(data, "unknown"))
    raise FormatError(
        "unknown", "", "not a card PNG, a card JSON, World Info, a lorebook_v3 file, a Twee 3 story or a cartridge"
    )


def _json_format(document: object) -> str:
    if isinstance(document, dict):
        if document.get("spec") in _CARD_SPECS:
            return "card-json"
        if "spec" not in document and isinstance(document.get("name"), str):
            if any(field in document for field in _V1_CARD_FIELDS):
                return "card-json"
    try:
        return lorebook_kind(document)
    except FormatError:
        pass
    if isinstance(document, dict) and "spec" in document:
        raise FormatError("unknown", "spec", f"{document['spec']!r} is not a format we read")
    raise FormatError("unknown", "", "JSON, but not a character card, World Info or a lorebook_v3 file")
