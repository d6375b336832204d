"""The file formats creators bring to Worldloom and take away, as pure Python (no Django).

Each format reads into frozen dataclasses, writes from the same dataclasses, and raises `FormatError` naming
the field or passage on bad input. Every reader refuses oversized input first (see `limits`): PNG over
8 MiB, JSON or Twee over 2 MiB, JSON nested deeper than 64 levels, more than 5,000 lore entries or passages.
Text stays text: escaping for HTML is the template's job.

- `cards`: Character Card V2 and V3 (and V1, upgraded), as JSON and in PNG `chara` / `ccv3` chunks.
- `lorebooks`: a card's `character_book`, the CCv3 `lorebook_v3` file and SillyTavern World Info.
- `lore_activation`: which lore entries the latest messages activate, as SillyTavern decides.
- `twee`: Twine stories in Twee 3.
- `detect`: which of these a file is, from its content.
"""

from __future__ import annotations

from worlds.formats.cards import (
    CardAsset,
    CharacterCard,
    card_from_json,
    card_from_png,
    card_to_json,
    card_to_png,
)
from worlds.formats.detect import FORMATS, detect_format
from worlds.formats.errors import FormatError
from worlds.formats.lore_activation import active_entries, estimate_tokens
from worlds.formats.lorebooks import (
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
from worlds.formats.twee import TwinePassage, TwineStory, twee_link, twee_parse, twee_serialise

__all__ = [
    "FORMATS",
    "CardAsset",
    "CharacterCard",
    "FormatError",
    "LoreEntry",
    "Lorebook",
    "TwinePassage",
    "TwineStory",
    "active_entries",
    "card_from_json",
    "card_from_png",
    "card_to_json",
    "card_to_png",
    "detect_format",
    "detect_lorebook",
    "estimate_tokens",
    "lorebook_from_character_book",
    "lorebook_from_v3",
    "lorebook_from_world_info",
    "lorebook_to_character_book",
    "lorebook_to_v3",
    "lorebook_to_world_info",
    "twee_link",
    "twee_parse",
    "twee_serialise",
]
