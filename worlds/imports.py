"""Importing what creators bring: character cards, lorebooks, Twine stories and world cartridges.

The format is judged from the content, never the file name. An import is one transaction: a file that fails
anywhere (its format, a field our models refuse, a missing asset) creates nothing, and the error names the
file's field or passage.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.db import transaction

from accounts.models import User
from common.images import image_stored
from worlds import formats
from worlds.cartridge import cartridge_read
from worlds.interchange import character_rows, lorebook_rows, story_rows
from worlds.models import Lorebook, World
from worlds.services import row_saved, slug_unique, world_create, world_from_document

Created = dict[str, Any]
# Cartridges carry images; cards and stories are far smaller (each format checks its own limit too).
MAX_IMPORT_BYTES = 64 * 1024 * 1024


@transaction.atomic
def content_import(*, data: bytes, owner: User, world: World | None = None) -> list[Created]:
    """Create what the file holds for `owner` (attached to `world` when given) and describe what was made."""
    try:
        kind = formats.detect_format(data)
        if kind in ("card-png", "card-json"):
            return character_import(data=data, kind=kind, owner=owner, world=world)
        if kind in ("world-info", "lorebook-v3"):
            return lorebook_import(data=data, kind=kind, owner=owner, world=world)
        if kind == "twee":
            return story_import(data=data, owner=owner, world=world)
        return cartridge_import(data=data, owner=owner)
    except formats.FormatError as error:
        raise ValidationError(str(error)) from None


def character_import(*, data: bytes, kind: str, owner: User, world: World | None) -> list[Created]:
    card = formats.card_from_png(data) if kind == "card-png" else formats.card_from_json(data)
    character, clues, book_rows = character_rows(card, owner=owner)
    created = []
    if book_rows is not None:
        book = save_lorebook(*book_rows, where="card: data.character_book")
        character.lorebook = book
    if kind == "card-png":
        # The portrait field re-encodes the card and names it itself, whatever the character is called.
        character.portrait = ContentFile(data, name="portrait.png")
    row_saved(character, "card: data")
    for clue in clues:
        clue.character = character
        row_saved(clue, f"card: data.extensions.worldloom.clues {clue.name!r}")
    if world is not None:
        world.characters.add(character)
    created.append(
        {
            "type": "character",
            "id": character.pk,
            "name": character.name,
            "lore_entries": character.lorebook.entries.count() if character.lorebook else 0,
        }
    )
    return created


def lorebook_import(*, data: bytes, kind: str, owner: User, world: World | None) -> list[Created]:
    record = formats.lorebook_from_v3(data) if kind == "lorebook-v3" else formats.lorebook_from_world_info(data)
    book = save_lorebook(*lorebook_rows(record, owner=owner, fallback_name="Imported lorebook"), where=kind)
    if world is not None:
        world.lorebooks.add(book)
    return [{"type": "lorebook", "id": book.pk, "name": book.name, "lore_entries": book.entries.count()}]


def story_import(*, data: bytes, owner: User, world: World | None) -> list[Created]:
    twine = formats.twee_parse(data)
    story, beats = story_rows(twine)
    created = []
    if world is None:
        world = world_create(
            owner=owner, title=twine.title, logline=f"An interactive story: {twine.title}"[:200], category="stories"
        )
        created.append({"type": "world", "id": world.pk, "name": world.title})
    story.world = world
    row_saved(story, "twee: StoryData")
    for beat in beats:
        beat.story = story
        row_saved(beat, f"twee: passage {beat.name!r}")
    created.append(
        {"type": "story", "id": story.pk, "name": story.title, "beats": len(beats), "start_beat": story.start_beat}
    )
    return created


def cartridge_import(*, data: bytes, owner: User) -> list[Created]:
    cartridge = cartridge_read(data)
    document = cartridge.document
    renamed = {name: store_asset(name, content) for name, content in cartridge.assets.items()}
    if renamed:
        document = with_asset_names(document, renamed)
    try:
        title = document["world"]["title"]
    except (KeyError, TypeError):
        raise ValidationError("cartridge: world.json: the world has no title") from None
    world = world_from_document(document, owner=owner, slug=slug_unique(str(title)))
    created: list[Created] = [{"type": "world", "id": world.pk, "name": world.title}]
    books = {book.pk: book for book in world.lorebooks.all()}
    for character in world.characters.all():
        if character.lorebook_id:
            books.setdefault(character.lorebook_id, character.lorebook)
        created.append(
            {
                "type": "character",
                "id": character.pk,
                "name": character.name,
                "lore_entries": character.lorebook.entries.count() if character.lorebook else 0,
            }
        )
    created += [
        {"type": "lorebook", "id": book.pk, "name": book.name, "lore_entries": book.entries.count()}
        for book in books.values()
    ]
    created += [
        {
            "type": "story",
            "id": story.pk,
            "name": story.title,
            "beats": story.beats.count(),
            "start_beat": story.start_beat,
        }
        for story in world.stories.all()
    ]
    return created


def save_lorebook(book: Lorebook, entries: list[Any], *, where: str) -> Lorebook:
    row_saved(book, where)
    for index, entry in enumerate(entries):
        entry.lorebook = book
        row_saved(entry, f"{where}.entries[{index}]")
    return book


def store_asset(name: str, content: bytes) -> str:
    """Store a cartridge's image, re-encoded, under a generated name; the name the cartridge gave it is dropped."""
    try:
        return image_stored(content, folder="imports")
    except ValidationError as error:
        raise ValidationError(f"cartridge: assets/{name}: {' '.join(error.messages)}") from None


def with_asset_names(document: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    """The document with each image's storage name replaced by the name it was stored under here."""
    world = dict(document["world"])
    world["cover_image"] = renamed.get(world.get("cover_image", ""), world.get("cover_image", ""))
    world["reference_images"] = [renamed.get(name, name) for name in world.get("reference_images", [])]
    characters = [
        {**character, "portrait": renamed.get(character.get("portrait", ""), character.get("portrait", ""))}
        for character in document.get("characters", [])
    ]
    return {**document, "world": world, "characters": characters}
