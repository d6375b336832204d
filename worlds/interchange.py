"""Between our models and the file formats' records (worlds.formats): characters, lorebooks, Twine stories.

Reading builds unsaved model rows (the import service validates and saves them in one transaction);
writing builds records the formats serialise. What a format carries that our models do not use is kept in
`card_extra` / `format_extra` / `extensions` and written back, so a file survives a round trip. What our
models hold that a card has no field for (appearance, goals, clues, memory policy, ...) travels in the card's
`extensions.worldloom`, which other tools keep and ignore.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from worlds import formats
from worlds.models import Beat, Character, Clue, Lorebook, LoreEntry, Story

WORLDLOOM_EXTENSION = "worldloom"
# Character fields a card has no place for, carried in extensions.worldloom.
CHARACTER_EXTRA_FIELDS = (
    "appearance",
    "speaking_style",
    "goals",
    "secrets",
    "memory_scope",
    "memory_limit",
    "players_can_view_memories",
    "players_can_edit_memories",
)
# Character field <-> card field, for the texts both have.
CARD_TEXT_FIELDS = (
    ("name", "name"),
    ("persona", "description"),
    ("personality", "personality"),
    ("scenario", "scenario"),
    ("greeting", "first_mes"),
    ("example_dialogue", "mes_example"),
    ("creator_notes", "creator_notes"),
    ("system_prompt", "system_prompt"),
    ("post_history_instructions", "post_history_instructions"),
)
# Card fields our Character does not use, kept in card_extra to be written back.
CARD_EXTRA_FIELDS = (
    "creator",
    "character_version",
    "nickname",
    "creator_notes_multilingual",
    "source",
    "group_only_greetings",
    "creation_date",
    "modification_date",
    "assets",
    "unknown",
)
ENTRY_FIELDS = (
    "name",
    "comment",
    "secondary_keys",
    "selective",
    "selective_logic",
    "content",
    "insertion_order",
    "priority",
    "constant",
    "enabled",
    "case_sensitive",
    "match_whole_words",
    "position",
    "probability",
    "use_probability",
    "prevent_recursion",
    "exclude_recursion",
    "extensions",
)
ENTRY_EXTRA_FIELDS = ("id", "use_regex", "unknown")
BOOK_DEFAULTS = {"scan_depth": 4, "token_budget": 1024, "recursive_scanning": True}


def lorebook_rows(record: formats.Lorebook, *, owner: Any, fallback_name: str) -> tuple[Lorebook, list[LoreEntry]]:
    """An unsaved Lorebook and its entries from a lorebook record."""
    book = Lorebook(
        owner=owner,
        name=record.name or fallback_name,
        description=record.description or "",
        extensions={**record.extensions, **({"unknown": record.unknown} if record.unknown else {})},
        **{
            name: getattr(record, name) if getattr(record, name) is not None else BOOK_DEFAULTS[name]
            for name in BOOK_DEFAULTS
        },
    )
    entries = [
        LoreEntry(
            keys=list(entry.keys),
            name=entry.name or "",
            format_extra=jsonable({name: getattr(entry, name) for name in ENTRY_EXTRA_FIELDS}),
            **{name: jsonable(getattr(entry, name)) for name in ENTRY_FIELDS if name != "name"},
        )
        for entry in record.entries
    ]
    return book, entries


def lorebook_from_document(book: dict[str, Any]) -> formats.Lorebook:
    """A lorebook of a world document (worlds.documents) as the formats' record, for activation in play."""
    fields = {name: value for name, value in book.items() if name not in ("key", "entries")}
    return lorebook_record(Lorebook(**fields), [LoreEntry(**entry) for entry in book.get("entries", [])])


def lorebook_record(book: Lorebook, entries: list[LoreEntry] | None = None) -> formats.Lorebook:
    """`book` as the formats' record; its entries are read from the database unless given."""
    extensions = dict(book.extensions)
    unknown = extensions.pop("unknown", {})
    return formats.Lorebook(
        name=book.name,
        description=book.description or None,
        scan_depth=book.scan_depth,
        token_budget=book.token_budget,
        recursive_scanning=book.recursive_scanning,
        extensions=extensions,
        unknown=unknown,
        # Creation order is the order of the file the book came from; insertion_order is about prompts.
        entries=tuple(
            lore_entry_record(entry) for entry in (book.entries.order_by("id") if entries is None else entries)
        ),
    )


def lore_entry_record(entry: LoreEntry) -> formats.LoreEntry:
    values = {name: getattr(entry, name) for name in ENTRY_FIELDS}
    values["name"] = entry.name or None
    extra = {name: entry.format_extra[name] for name in ENTRY_EXTRA_FIELDS if name in entry.format_extra}
    return formats.LoreEntry(keys=tuple(entry.keys), **values, **extra)


def character_rows(
    card: formats.CharacterCard, *, owner: Any
) -> tuple[Character, list[Clue], tuple[Lorebook, list[LoreEntry]] | None]:
    """An unsaved Character, its clues and (when the card embeds one) its lorebook, from a card."""
    extensions = dict(card.extensions)
    ours = extensions.pop(WORLDLOOM_EXTENSION, {})
    ours = ours if isinstance(ours, dict) else {}
    character = Character(
        owner=owner,
        **{ours: getattr(card, theirs) for ours, theirs in CARD_TEXT_FIELDS},
        alternate_greetings=list(card.alternate_greetings),
        tags=list(card.tags),
        card_extensions=extensions,
        card_extra=jsonable({name: getattr(card, name) for name in CARD_EXTRA_FIELDS}),
        **{name: ours[name] for name in CHARACTER_EXTRA_FIELDS if name in ours},
    )
    clues = [Clue(**clue) for clue in ours.get("clues", []) if isinstance(clue, dict)]
    book = (
        lorebook_rows(card.character_book, owner=owner, fallback_name=f"{card.name}'s lore")
        if card.character_book is not None
        else None
    )
    return character, clues, book


def character_card(character: Character) -> formats.CharacterCard:
    extra = dict(character.card_extra)
    assets = extra.pop("assets", None)
    ours = {name: getattr(character, name) for name in CHARACTER_EXTRA_FIELDS}
    ours["clues"] = [
        {"name": clue.name, "text": clue.text, "condition": clue.condition, "condition_value": clue.condition_value}
        for clue in character.clues.order_by("id")
    ]
    return formats.CharacterCard(
        **{theirs: getattr(character, ours) for ours, theirs in CARD_TEXT_FIELDS},
        alternate_greetings=tuple(character.alternate_greetings),
        tags=tuple(character.tags),
        extensions={**character.card_extensions, WORLDLOOM_EXTENSION: ours},
        character_book=lorebook_record(character.lorebook) if character.lorebook_id else None,
        assets=tuple(formats.CardAsset(**asset) for asset in assets) if assets else None,
        **{name: value for name, value in extra.items() if name in CARD_EXTRA_FIELDS},
    )


def story_rows(twine: formats.TwineStory) -> tuple[Story, list[Beat]]:
    """An unsaved Story (its world is set by the caller) and its beats from a Twine story."""
    story = Story(
        title=twine.title,
        start_beat=twine.start or "Start",
        twine_data=jsonable(
            {
                "ifid": twine.ifid,
                "format": twine.story_format,
                "format-version": twine.story_format_version,
                "tag-colors": twine.tag_colors,
                "zoom": twine.zoom,
                "extra": twine.story_data_extra,
            }
        ),
    )
    beats = []
    for order, passage in enumerate(twine.passages):
        metadata = dict(passage.metadata)
        beats.append(
            Beat(
                name=passage.name,
                scene=passage.text,
                goal=metadata.pop("goal", ""),
                choice_guidance=metadata.pop("choice_guidance", ""),
                choices=[{"text": text, "to": target} for text, target in passage.links],
                tags=list(passage.tags),
                twine_metadata=metadata,
                order=order,
            )
        )
    return story, beats


def twine_story(story: Story) -> formats.TwineStory:
    data = story.twine_data
    return formats.TwineStory(
        title=story.title,
        start=story.start_beat,
        ifid=data.get("ifid"),
        story_format=data.get("format"),
        story_format_version=data.get("format-version"),
        tag_colors=data.get("tag-colors") or {},
        zoom=data.get("zoom"),
        story_data_extra=data.get("extra") or {},
        passages=tuple(twine_passage(beat) for beat in story.beats.all()),
    )


def twine_passage(beat: Beat) -> formats.TwinePassage:
    """A beat as a passage; choices its scene does not already link to are appended as links."""
    linked = set(formats.TwinePassage(name=beat.name, text=beat.scene).links)
    missing = [formats.twee_link(c["text"], c["to"]) for c in beat.choices if (c["text"], c["to"]) not in linked]
    ours = {name: value for name, value in (("goal", beat.goal), ("choice_guidance", beat.choice_guidance)) if value}
    return formats.TwinePassage(
        name=beat.name,
        text="\n".join([beat.scene, *missing]) if missing else beat.scene,
        tags=tuple(beat.tags),
        metadata={**beat.twine_metadata, **ours},
    )


def jsonable(value: Any) -> Any:
    """Records hold tuples and dataclasses; JSON fields want lists and dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: jsonable(item) for name, item in dataclasses.asdict(value).items()}
    if isinstance(value, tuple | list):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    return value
