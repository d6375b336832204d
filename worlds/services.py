"""Writes to authored content: creating and editing, attaching, publishing a version, remixing one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import F
from django.utils.text import slugify

from accounts.models import User
from worlds import validation
from worlds.document_schema import document_problem
from worlds.documents import DOCUMENT_FORMAT, DOCUMENT_VERSION, NOT_CONTENT_FIELDS, world_document
from worlds.events import version_published
from worlds.models import (
    Beat,
    Character,
    Clue,
    Hook,
    HookBranch,
    Lorebook,
    LoreEntry,
    Story,
    Tag,
    World,
    WorldReferenceImage,
    WorldVersion,
)
from worlds.selectors import version_document_for, world_problems


def slug_unique(title: str) -> str:
    """A slug for a new world: the title's, with a number added when that slug is taken."""
    base = slugify(title)[:120] or "world"
    slug, number = base, 1
    while World.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return slug


# A child row given to a service: a saved row to keep (its new values set on it) or the values of a new one.
ChildRow = models.Model | dict[str, Any]


def children_replace(*, parent: models.Model, relation: str, rows: Sequence[ChildRow]) -> None:
    """Make `rows` the parent's rows of the reverse relation `relation` (a lorebook's entries, say).

    Saved rows left out are deleted first, so that a row may take the name of one deleted in the same edit;
    the rows given are then validated with the parent set and saved in order. An invalid row raises, and the
    caller's transaction rolls everything back, so a failed edit never leaves half a lorebook behind.
    """
    related = parent._meta.get_field(relation)
    kept = [row.pk for row in rows if isinstance(row, models.Model) and row.pk is not None]
    getattr(parent, relation).exclude(pk__in=kept).delete()
    for index, row in enumerate(rows):
        child = row if isinstance(row, models.Model) else related.related_model(**row)
        setattr(child, related.field.name, parent)
        try:
            child.full_clean()
        except ValidationError as error:
            raise ValidationError({relation: [f"#{index + 1}: {message}" for message in error.messages]}) from None
        child.save()


def content_with_relations_save(
    instance: models.Model,
    values: dict[str, Any],
    *,
    children: dict[str, Sequence[ChildRow] | None],
    links: dict[str, Iterable[models.Model] | None],
) -> Any:
    """Set `values` on a new or existing row, validate it as a whole and save it; then set its many-to-many
    `links` and replace its `children`, where None leaves one as it is."""
    for name, value in values.items():
        setattr(instance, name, value)
    instance.full_clean()
    instance.save()
    for relation, linked in links.items():
        if linked is not None:
            getattr(instance, relation).set(linked)
    for relation, rows in children.items():
        if rows is not None:
            children_replace(parent=instance, relation=relation, rows=rows)
    return instance


@transaction.atomic
def world_create(
    *,
    owner: User,
    tags: list[str] | None = None,
    characters: Iterable[Character] = (),
    lorebooks: Iterable[Lorebook] = (),
    **values: Any,
) -> World:
    world = World(owner=owner, slug=slug_unique(values.get("title", "")))
    content_with_relations_save(world, values, children={}, links={"characters": characters, "lorebooks": lorebooks})
    world_tags_set(world=world, tags=tags or [])
    return world


@transaction.atomic
def world_update(
    *,
    world: World,
    tags: list[str] | None = None,
    characters: Iterable[Character] | None = None,
    lorebooks: Iterable[Lorebook] | None = None,
    **values: Any,
) -> World:
    content_with_relations_save(world, values, children={}, links={"characters": characters, "lorebooks": lorebooks})
    if tags is not None:
        world_tags_set(world=world, tags=tags)
    return world


@transaction.atomic
def character_create(*, owner: User, clues: Sequence[ChildRow] = (), **values: Any) -> Character:
    return character_update(character=Character(owner=owner), clues=clues, **values)


@transaction.atomic
def character_update(*, character: Character, clues: Sequence[ChildRow] | None = None, **values: Any) -> Character:
    return content_with_relations_save(character, values, children={"clues": clues}, links={})


@transaction.atomic
def lorebook_create(*, owner: User, entries: Sequence[ChildRow] = (), **values: Any) -> Lorebook:
    return lorebook_update(lorebook=Lorebook(owner=owner), entries=entries, **values)


@transaction.atomic
def lorebook_update(*, lorebook: Lorebook, entries: Sequence[ChildRow] | None = None, **values: Any) -> Lorebook:
    return content_with_relations_save(lorebook, values, children={"entries": entries}, links={})


@transaction.atomic
def hook_create(*, world: World, branches: Sequence[ChildRow] = (), **values: Any) -> Hook:
    return hook_update(hook=Hook(world=world), branches=branches, **values)


@transaction.atomic
def hook_update(*, hook: Hook, branches: Sequence[ChildRow] | None = None, **values: Any) -> Hook:
    return content_with_relations_save(hook, values, children={"branches": branches}, links={})


@transaction.atomic
def story_create(
    *, world: World, beats: Sequence[ChildRow] = (), characters: Iterable[Character] = (), **values: Any
) -> Story:
    return story_update(story=Story(world=world), beats=beats, characters=characters, **values)


@transaction.atomic
def story_update(
    *,
    story: Story,
    beats: Sequence[ChildRow] | None = None,
    characters: Iterable[Character] | None = None,
    **values: Any,
) -> Story:
    return content_with_relations_save(story, values, children={"beats": beats}, links={"characters": characters})


def world_tags_set(*, world: World, tags: list[str]) -> None:
    validation.strings_clean("tags", tags)
    names = sorted({slugify(tag)[:40] for tag in tags if slugify(tag)})
    if len(names) > 20:
        raise ValidationError({"tags": "a world has at most 20 tags"})
    world.tags.set([Tag.objects.get_or_create(name=name)[0] for name in names])


@transaction.atomic
def world_publish(*, world: World, by: User) -> WorldVersion:
    """Freeze the world as its next version and submit it for review; refused while any reference is broken.

    The version stays pending (and private) until a moderator approves it; the world's approved version, if
    it has one, stays live meanwhile. The automated checks run as Celery tasks once this commits.
    """
    problems = world_problems(world=world)
    if problems:
        raise ValidationError(problems)
    # Lock the world so that two publishes at once cannot take the same number.
    World.objects.select_for_update().filter(pk=world.pk).first()
    last = world.versions.aggregate(last=models.Max("number"))["last"] or 0
    version = WorldVersion.objects.create(world=world, number=last + 1, document=world_document(world), published_by=by)
    version_published.send(sender=WorldVersion, version=version)
    return version


@transaction.atomic
def world_remix(*, version: WorldVersion, owner: User) -> World:
    """A new working copy of a published version for `owner`, crediting where it came from; another creator's
    copy starts without what the world keeps from players (its secrets, clues and hook branches)."""
    document = version_document_for(version=version, user=owner)
    world = world_from_document(document, owner=owner, slug=slug_unique(document["world"]["title"]))
    world.remixed_from = version
    world.save(update_fields=["remixed_from"])
    return world


@transaction.atomic
def world_from_document(document: dict[str, Any], *, owner: Any, slug: str) -> World:
    """Build a new world owned by `owner` from a document; every row is validated, and all or nothing is saved.

    Lists a document leaves out count as empty, and fields it leaves out take their defaults, so documents
    can be written by hand (the demo content is) and older cartridges keep importing.
    """
    if document.get("format") != DOCUMENT_FORMAT or document.get("format_version") != DOCUMENT_VERSION:
        raise ValidationError(f"not a {DOCUMENT_FORMAT} document of version {DOCUMENT_VERSION}")
    problem = document_problem(document)
    if problem is not None:
        raise ValidationError("document {}: {}".format(*problem))
    world_values = dict(rows(document, "world", "document", many=False)[0])
    tag_names = world_values.pop("tags", [])
    reference_images = world_values.pop("reference_images", [])
    world_lorebooks = world_values.pop("lorebooks", [])

    lorebooks: dict[str, Lorebook] = {}
    for book_values in rows(document, "lorebooks", "document"):
        key, entries = str(book_values.pop("key", "")), rows(book_values, "entries", "lorebook")
        book_values.pop("entries", None)
        lorebooks[key] = saved(Lorebook, book_values, f"lorebook {key}", owner=owner)
        for index, entry in enumerate(entries):
            saved(LoreEntry, entry, f"lorebook {key} entry {index}", lorebook=lorebooks[key])

    characters: dict[str, Character] = {}
    for character_values in rows(document, "characters", "document"):
        key = str(character_values.pop("key", ""))
        clues = rows(character_values, "clues", f"character {key}")
        character_values.pop("clues", None)
        book = character_values.pop("lorebook", None)
        characters[key] = saved(
            Character,
            character_values,
            f"character {key}",
            owner=owner,
            lorebook=referenced(lorebooks, book, f"character {key}") if book else None,
        )
        for clue in clues:
            saved(Clue, clue, f"character {key} clue {clue.get('name')}", character=characters[key])

    world = saved(World, world_values, "world", owner=owner, slug=slug)
    world_tags_set(world=world, tags=tag_names)
    world.characters.set(characters.values())
    world.lorebooks.set([referenced(lorebooks, key, "world") for key in world_lorebooks])
    for image in reference_images:
        WorldReferenceImage.objects.create(world=world, image=image)
    for hook_values in rows(document, "hooks", "document"):
        branches = rows(hook_values, "branches", f"hook {hook_values.get('name')}")
        hook_values.pop("branches", None)
        hook = saved(Hook, hook_values, f"hook {hook_values.get('name')}", world=world)
        for branch in branches:
            saved(HookBranch, branch, f"hook {hook.name} branch {branch.get('name')}", hook=hook)
    for story_values in rows(document, "stories", "document"):
        beats = rows(story_values, "beats", f"story {story_values.get('title')}")
        story_characters = story_values.pop("characters", [])
        story_values.pop("beats", None)
        story = saved(Story, story_values, f"story {story_values.get('title')}", world=world)
        story.characters.set([referenced(characters, key, f"story {story.title}") for key in story_characters])
        for beat in beats:
            saved(Beat, beat, f"story {story.title} beat {beat.get('name')}", story=story)
    return world


def rows(container: dict[str, Any], name: str, where: str, *, many: bool = True) -> list[dict[str, Any]]:
    """Copies of the objects under `name` (a list of them, or with many=False one); absent means none."""
    value = container.get(name, [] if many else None)
    found = value if many else [value]
    if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
        raise ValidationError(f"{where}: '{name}' must be {'a list of objects' if many else 'an object'}")
    return [dict(item) for item in found]


def referenced(known: dict[str, Any], key: Any, where: str) -> Any:
    if key not in known:
        raise ValidationError(f"{where}: refers to {key!r}, which the document does not define")
    return known[key]


def saved(model: type[models.Model], values: dict[str, Any], where: str, **relations: Any) -> Any:
    """Build, validate and save a `model` row from a document's values; errors name where it failed."""
    allowed = {field.name for field in model._meta.concrete_fields if not field.is_relation} - NOT_CONTENT_FIELDS
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ValidationError(f"{where}: unknown fields {', '.join(unknown)}")
    return row_saved(model(**values, **relations), where)


def row_saved(row: models.Model, where: str) -> Any:
    """Validate and save one row of a document or an imported file; a refusal names where it came from."""
    try:
        row.full_clean()
    except ValidationError as error:
        problems = "; ".join(
            f"{field}: {message}" for field, messages in error.message_dict.items() for message in messages
        )
        raise ValidationError(f"{where}: {problems}") from None
    row.save()
    return row


@transaction.atomic
def hook_outcome_record(*, world_id: int, hook_name: str, branch_name: str | None) -> None:
    """Count one outcome of a hook in play for the creator: the branch taken, or (None) the fallback used.

    Sessions play a frozen version, while the counts live on the working copy; a hook or branch renamed or
    deleted since the version was published is not counted rather than counted against something else.
    """
    if branch_name is None:
        Hook.objects.filter(world_id=world_id, name=hook_name).update(times_fallen_back=F("times_fallen_back") + 1)
    else:
        HookBranch.objects.filter(hook__world_id=world_id, hook__name=hook_name, name=branch_name).update(
            times_chosen=F("times_chosen") + 1
        )
