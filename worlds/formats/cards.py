"""Character cards: Character Card V2 and V3, as JSON files and inside PNG portraits.

Follows the Character Card V2 spec by malfoyslastname (github.com/malfoyslastname/character-card-spec-v2,
`spec: "chara_card_v2"`) and the Character Card V3 spec by kwaroran (github.com/kwaroran/character-card-spec-v3,
`spec: "chara_card_v3"`). Version 1 cards (TavernAI's flat JSON: name, description, personality, scenario,
first_mes, mes_example) are upgraded on reading.

In a PNG the card is the base64 of its UTF-8 JSON in a tEXt chunk: `chara` for V2, `ccv3` for V3. Reading
prefers `ccv3`, as the V3 spec asks; writing puts in both, replacing any there, so V2-only tools still read
the card. A card's JSON from any container is checked the same way, with errors that name the field:
`card-json: data.name: must be a non-empty string`.

Fields of `data` no spec defines are kept in `CharacterCard.unknown` and `extensions` is kept verbatim, so
both survive a round trip. Fields at the root beside `spec`, `spec_version` and `data` are V1 mirrors or
SillyTavern's bookkeeping (avatar, chat, create_date) and are not kept.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from worlds.formats.errors import FormatError
from worlds.formats.json_input import JsonObject, dump_json, load_json
from worlds.formats.lorebooks import Lorebook, lorebook_to_character_book, read_character_book
from worlds.formats.png_chunks import read_chunks, text_chunk, text_chunk_keyword, text_chunks, write_chunks
from worlds.formats.records import store_as_tuples

CARD_V2_SPEC = "chara_card_v2"
CARD_V3_SPEC = "chara_card_v3"
V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
_V2_TEXT_FIELDS = (
    *V1_FIELDS[1:],
    "creator_notes",
    "system_prompt",
    "post_history_instructions",
    "creator",
    "character_version",
)
_V2_FIELDS = ("name", *_V2_TEXT_FIELDS, "alternate_greetings", "tags", "extensions", "character_book")
_V3_FIELDS = (
    "nickname",
    "creator_notes_multilingual",
    "source",
    "group_only_greetings",
    "creation_date",
    "modification_date",
    "assets",
)
PLACEHOLDER_SIZE = (400, 600)  # the 2:3 portrait most card sites display
PLACEHOLDER_COLOUR = (46, 58, 74)


@dataclass(frozen=True)
class CardAsset:
    """A V3 asset: an icon, background, emotion or other file the card points to."""

    type: str  # "icon", "background", "user_icon", "emotion", or an application's "x_..." type
    uri: str  # https:, data:, embeded:// (sic, the spec's spelling) or ccdefault:
    name: str
    ext: str


@dataclass(frozen=True)
class CharacterCard:
    """A character card, V2 fields plus the V3 additions (None where the card is V2 or leaves them out).

    `creator_notes` (and `creator_notes_multilingual`) are the creator's notes to the people who use the card.
    They are kept for display and export only and must never reach a prompt.
    """

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    creator_notes: str = ""  # never for prompts: see the class docstring
    system_prompt: str = ""
    post_history_instructions: str = ""
    alternate_greetings: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    creator: str = ""
    character_version: str = ""
    extensions: dict[str, Any] = field(default_factory=dict)
    character_book: Lorebook | None = None
    # V3 additions
    nickname: str | None = None
    creator_notes_multilingual: dict[str, str] | None = None  # never for prompts, like creator_notes
    source: tuple[str, ...] | None = None
    group_only_greetings: tuple[str, ...] = ()
    creation_date: int | float | None = None  # Unix seconds
    modification_date: int | float | None = None
    assets: tuple[CardAsset, ...] | None = None
    unknown: dict[str, Any] = field(default_factory=dict)  # fields of `data` no spec defines, kept verbatim

    def __post_init__(self) -> None:
        store_as_tuples(self, "alternate_greetings", "tags", "source", "group_only_greetings", "assets")


# Reading


def card_from_json(data: bytes | str) -> CharacterCard:
    """Read a card JSON file: V2, V3, or V1 (upgraded)."""
    return _read_card(load_json(data, "card-json"), "card-json")


def card_from_png(png: bytes) -> CharacterCard:
    """Read the card in a PNG's `ccv3` chunk, or its `chara` chunk when it has no `ccv3`."""
    texts = text_chunks(read_chunks(png, format_name="card-png"))
    for keyword in ("ccv3", "chara"):
        if keyword in texts:
            return _read_card(load_json(_decode_base64(texts[keyword], keyword), "card-png", where=keyword), "card-png")
    raise FormatError("card-png", "", "this PNG holds no character card (no 'chara' or 'ccv3' text chunk)")


def _decode_base64(text: str, keyword: str) -> bytes:
    # Some writers wrap the base64 in lines or drop its padding; neither changes the bytes.
    compact = "".join(text.split())
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except binascii.Error as error:
        raise FormatError("card-png", f"{keyword} chunk", "is not valid base64") from error


def _read_card(document: Any, format_name: str) -> CharacterCard:
    root = JsonObject(document, format_name=format_name, where="")
    if not root.has("spec"):
        if root.has("data"):
            raise root.error("spec", f"is missing: expected {CARD_V2_SPEC!r} or {CARD_V3_SPEC!r}")
        return _read_v1(root)
    spec = root.value["spec"]
    if spec not in (CARD_V2_SPEC, CARD_V3_SPEC):
        raise root.error("spec", f"must be {CARD_V2_SPEC!r} or {CARD_V3_SPEC!r}, not {spec!r}")
    data = root.child("data")
    v3_fields = _read_v3_fields(data) if spec == CARD_V3_SPEC else {}
    return CharacterCard(
        name=data.non_empty_text("name"),
        **{name: data.text(name) for name in _V2_TEXT_FIELDS},
        alternate_greetings=data.texts("alternate_greetings"),
        tags=data.texts("tags"),
        extensions=data.mapping("extensions"),
        character_book=read_character_book(data.child("character_book")) if data.has("character_book") else None,
        **v3_fields,
        unknown=data.rest(_V2_FIELDS + (_V3_FIELDS if spec == CARD_V3_SPEC else ())),
    )


def _read_v3_fields(data: JsonObject) -> dict[str, Any]:
    multilingual = data.optional_mapping("creator_notes_multilingual")
    if multilingual is not None:
        notes = JsonObject(multilingual, format_name=data.format_name, where=data.path("creator_notes_multilingual"))
        for language in multilingual:
            notes.text(language)
    assets = None
    if data.has("assets"):
        assets = tuple(
            CardAsset(
                type=asset.non_empty_text("type"),
                uri=asset.text("uri"),
                name=asset.text("name"),
                ext=asset.text("ext"),
            )
            for asset in data.children("assets", limit=1_000)
        )
    return {
        "nickname": data.optional_text("nickname"),
        "creator_notes_multilingual": multilingual,
        "source": data.optional_texts("source"),
        "group_only_greetings": data.texts("group_only_greetings"),
        "creation_date": data.optional_number("creation_date"),
        "modification_date": data.optional_number("modification_date"),
        "assets": assets,
    }


def _read_v1(root: JsonObject) -> CharacterCard:
    if not any(root.has(name) for name in V1_FIELDS[1:]):
        raise FormatError(
            root.format_name,
            "spec",
            f"is missing, and this is no V1 card either (it has none of {', '.join(V1_FIELDS)})",
        )
    return CharacterCard(
        name=root.non_empty_text("name"),
        **{name: root.text(name) for name in V1_FIELDS[1:]},
        unknown=root.rest(V1_FIELDS),
    )


# Writing


def card_to_json(card: CharacterCard, version: int = 3) -> bytes:
    """The card as a UTF-8 JSON file, V2 or V3. V2 has no place for the V3 additions and leaves them out."""
    return dump_json(card_document(card, version), pretty=True).encode("utf-8")


def card_document(card: CharacterCard, version: int) -> dict[str, Any]:
    """The card as a JSON-ready V2 or V3 object."""
    if version not in (2, 3):
        raise ValueError(f"card version must be 2 or 3, not {version!r}")
    data: dict[str, Any] = {
        "name": card.name,
        **{name: getattr(card, name) for name in _V2_TEXT_FIELDS},
        "alternate_greetings": list(card.alternate_greetings),
        "tags": list(card.tags),
        "extensions": card.extensions,
    }
    if card.character_book is not None:
        data["character_book"] = lorebook_to_character_book(card.character_book)
    if version == 3:
        data["group_only_greetings"] = list(card.group_only_greetings)
        optional = {
            "nickname": card.nickname,
            "creator_notes_multilingual": card.creator_notes_multilingual,
            "source": None if card.source is None else list(card.source),
            "creation_date": card.creation_date,
            "modification_date": card.modification_date,
            "assets": None if card.assets is None else [_asset_object(asset) for asset in card.assets],
        }
        data |= {name: value for name, value in optional.items() if value is not None}
    data |= {name: value for name, value in card.unknown.items() if name not in data}
    if version == 2:
        return {"spec": CARD_V2_SPEC, "spec_version": "2.0", "data": data}
    return {"spec": CARD_V3_SPEC, "spec_version": "3.0", "data": data}


def _asset_object(asset: CardAsset) -> dict[str, str]:
    return {"type": asset.type, "uri": asset.uri, "name": asset.name, "ext": asset.ext}


def card_to_png(card: CharacterCard, image_png: bytes | None = None) -> bytes:
    """`image_png` (or a plain placeholder portrait) carrying the card in both a `chara` (V2) and a `ccv3`
    (V3) chunk. Text chunks of those names already in the image are replaced; every other chunk is kept."""
    chunks = read_chunks(image_png if image_png is not None else _placeholder_png(), format_name="card-png")
    kept = [chunk for chunk in chunks if text_chunk_keyword(chunk) not in ("chara", "ccv3")]
    card_chunks = [
        text_chunk(keyword, _encode_base64(card_document(card, version)))
        for keyword, version in (("chara", 2), ("ccv3", 3))
    ]
    # Before IEND, where SillyTavern puts them: a reader that stops at the image data still finds them.
    return write_chunks(kept[:-1] + card_chunks + kept[-1:])


def _encode_base64(document: dict[str, Any]) -> str:
    return base64.b64encode(dump_json(document, pretty=False).encode("utf-8")).decode("ascii")


def _placeholder_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", PLACEHOLDER_SIZE, PLACEHOLDER_COLOUR).save(buffer, format="PNG")
    return buffer.getvalue()
