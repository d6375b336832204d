"""A world and everything it reaches as one plain JSON document (`worlds.services.world_from_document` reads it back).

The document is what a published version freezes, what a remix starts from, and the `world.json` of a
cartridge. Entities refer to each other by keys local to the document ("character-0"), never by database ids,
so a document rebuilds the same world for any owner on any installation. Images appear as storage names; a
cartridge carries their bytes.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from worlds.models import World

DOCUMENT_FORMAT = "worldloom-world"
DOCUMENT_VERSION = 1

# Fields that identify a row or tie it to its place in this database rather than describe the content.
IDENTITY_FIELDS = {"id", "owner", "created_at", "updated_at", "slug", "remixed_from"}
# What players did, counted for the creator: a remix, an import or a new version starts from nothing.
STATISTICS_FIELDS = {"times_chosen", "times_fallen_back"}
NOT_CONTENT_FIELDS = IDENTITY_FIELDS | STATISTICS_FIELDS


def content_fields(instance: models.Model) -> dict[str, Any]:
    """The instance's own values: concrete, non-relational fields, images as their storage names."""
    values: dict[str, Any] = {}
    for field in instance._meta.concrete_fields:
        if field.name in NOT_CONTENT_FIELDS or field.is_relation:
            continue
        value = getattr(instance, field.attname)
        values[field.name] = value.name if isinstance(field, models.FileField) else value
    return values


def world_document(world: World) -> dict[str, Any]:
    """Everything `world` reaches, as a JSON-ready dict."""
    characters = list(world.characters.order_by("id"))
    lorebooks = {book.id: book for book in world.lorebooks.order_by("id")}
    for character in characters:
        if character.lorebook_id is not None:
            lorebooks.setdefault(character.lorebook_id, character.lorebook)
    lorebook_keys = {book_id: f"lorebook-{index}" for index, book_id in enumerate(sorted(lorebooks))}
    character_keys = {character.id: f"character-{index}" for index, character in enumerate(characters)}
    return {
        "format": DOCUMENT_FORMAT,
        "format_version": DOCUMENT_VERSION,
        "world": content_fields(world)
        | {
            "tags": sorted(world.tags.values_list("name", flat=True)),
            "reference_images": [reference.image.name for reference in world.reference_images.order_by("id")],
            "lorebooks": [lorebook_keys[book.id] for book in world.lorebooks.order_by("id")],
        },
        "lorebooks": [
            {"key": lorebook_keys[book_id]}
            | content_fields(lorebooks[book_id])
            | {"entries": [content_fields(entry) for entry in lorebooks[book_id].entries.all()]}
            for book_id in sorted(lorebooks)
        ],
        "characters": [
            {"key": character_keys[character.id]}
            | content_fields(character)
            | {
                "lorebook": lorebook_keys.get(character.lorebook_id),
                "clues": [content_fields(clue) for clue in character.clues.order_by("id")],
            }
            for character in characters
        ],
        "hooks": [
            content_fields(hook) | {"branches": [content_fields(branch) for branch in hook.branches.all()]}
            for hook in world.hooks.order_by("id")
        ],
        "stories": [
            content_fields(story)
            | {
                "characters": [character_keys[c.id] for c in story.characters.order_by("id") if c.id in character_keys],
                "beats": [content_fields(beat) for beat in story.beats.all()],
            }
            for story in world.stories.order_by("id")
        ],
    }


# What a world keeps from its players, however public the version: the secrets characters hide, the clues
# they reveal only when a condition holds, and how each hook's branches judge and reward what a player does.
# Play reads the full document; everyone who may see a version but does not own it reads `document_public`.
CHARACTER_HIDDEN_FIELDS = {"secrets": "", "clues": []}
HOOK_HIDDEN_FIELDS = {"branches": [], "fallback_guidance": ""}


def document_public(document: dict[str, Any]) -> dict[str, Any]:
    """`document` without what it keeps from players (see CHARACTER_HIDDEN_FIELDS); still a valid document."""
    return {
        **document,
        "characters": [{**character, **CHARACTER_HIDDEN_FIELDS} for character in document.get("characters", [])],
        "hooks": [{**hook, **HOOK_HIDDEN_FIELDS} for hook in document.get("hooks", [])],
    }
