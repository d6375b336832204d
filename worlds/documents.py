"""A world and everything it reaches as one plain JSON document, and back.

The document is what a published version freezes, what a remix starts from, and the `world.json` of a
cartridge. Entities refer to each other by keys local to the document ("character-0"), never by database ids,
so a document rebuilds the same world for any owner on any installation. Images appear as storage names; a
cartridge carries their bytes.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from stories.models import Beat, Story
from worlds.models import Character, Clue, Hook, HookBranch, Lorebook, LoreEntry, Tag, World, WorldReferenceImage

DOCUMENT_FORMAT = "worldloom-world"
DOCUMENT_VERSION = 1

# Fields that identify a row or tie it to its place in this database rather than describe the content.
IDENTITY_FIELDS = {"id", "owner", "created_at", "updated_at", "slug", "remixed_from"}


def content_fields(instance: models.Model) -> dict[str, Any]:
    """The instance's own values: concrete, non-relational fields, images as their storage names."""
    values: dict[str, Any] = {}
    for field in instance._meta.concrete_fields:
        if field.name in IDENTITY_FIELDS or field.is_relation:
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


@transaction.atomic
def world_from_document(document: dict[str, Any], *, owner: Any, slug: str) -> World:
    """Build a new world owned by `owner` from a document; every row is validated, and all or nothing is saved."""
    if document.get("format") != DOCUMENT_FORMAT or document.get("format_version") != DOCUMENT_VERSION:
        raise ValidationError(f"not a {DOCUMENT_FORMAT} document of version {DOCUMENT_VERSION}")
    world_values = dict(document["world"])
    tag_names = world_values.pop("tags")
    reference_images = world_values.pop("reference_images")
    world_lorebooks = world_values.pop("lorebooks")

    lorebooks: dict[str, Lorebook] = {}
    for book_values in document["lorebooks"]:
        book_values = dict(book_values)
        key, entries = book_values.pop("key"), book_values.pop("entries")
        lorebooks[key] = saved(Lorebook, book_values, f"lorebook {key}", owner=owner)
        for index, entry in enumerate(entries):
            saved(LoreEntry, entry, f"lorebook {key} entry {index}", lorebook=lorebooks[key])

    characters: dict[str, Character] = {}
    for character_values in document["characters"]:
        character_values = dict(character_values)
        key, clues, book = character_values.pop("key"), character_values.pop("clues"), character_values.pop("lorebook")
        characters[key] = saved(
            Character, character_values, f"character {key}", owner=owner, lorebook=lorebooks[book] if book else None
        )
        for clue in clues:
            saved(Clue, clue, f"character {key} clue {clue.get('name')}", character=characters[key])

    world = saved(World, world_values, "world", owner=owner, slug=slug)
    world.tags.set([Tag.objects.get_or_create(name=name)[0] for name in tag_names])
    world.characters.set(characters.values())
    world.lorebooks.set([lorebooks[key] for key in world_lorebooks])
    for image in reference_images:
        WorldReferenceImage.objects.create(world=world, image=image)
    for hook_values in document["hooks"]:
        hook_values = dict(hook_values)
        branches = hook_values.pop("branches")
        hook = saved(Hook, hook_values, f"hook {hook_values.get('name')}", world=world)
        for branch in branches:
            saved(HookBranch, branch, f"hook {hook.name} branch {branch.get('name')}", hook=hook)
    for story_values in document["stories"]:
        story_values = dict(story_values)
        beats, story_characters = story_values.pop("beats"), story_values.pop("characters")
        story = saved(Story, story_values, f"story {story_values.get('title')}", world=world)
        story.characters.set([characters[key] for key in story_characters])
        for beat in beats:
            saved(Beat, beat, f"story {story.title} beat {beat.get('name')}", story=story)
    return world


def saved(model: type[models.Model], values: dict[str, Any], where: str, **relations: Any) -> Any:
    """Build, validate and save a `model` row; a ValidationError names where in the document it failed."""
    allowed = {field.name for field in model._meta.concrete_fields if not field.is_relation} - IDENTITY_FIELDS
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ValidationError(f"{where}: unknown fields {', '.join(unknown)}")
    instance = model(**values, **relations)
    try:
        instance.full_clean()
    except ValidationError as error:
        problems = "; ".join(
            f"{field}: {message}" for field, messages in error.message_dict.items() for message in messages
        )
        raise ValidationError(f"{where}: {problems}") from None
    instance.save()
    return instance
