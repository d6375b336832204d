"""Writes to authored content: creating and editing, attaching, publishing a version, remixing one."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils.text import slugify

from accounts.models import User
from worlds.documents import world_document, world_from_document
from worlds.models import Tag, World, WorldVersion
from worlds.selectors import world_problems


def slug_unique(title: str) -> str:
    """A slug for a new world: the title's, with a number added when that slug is taken."""
    base = slugify(title)[:120] or "world"
    slug, number = base, 1
    while World.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return slug


@transaction.atomic
def content_save(instance: models.Model, values: dict[str, Any]) -> Any:
    """Set `values` on a new or existing row, validate it as a whole, save it."""
    for name, value in values.items():
        setattr(instance, name, value)
    instance.full_clean()
    instance.save()
    return instance


@transaction.atomic
def content_save_with_children(
    instance: models.Model, values: dict[str, Any], children: dict[str, list[dict[str, Any]]]
) -> Any:
    """Save a row and replace the rows of each named reverse relation (a lorebook's entries, say) at once.

    The children are validated like any row; one invalid child rolls everything back, so a failed edit
    never leaves half a lorebook behind.
    """
    content_save(instance, values)
    for relation, rows in children.items():
        related = instance._meta.get_field(relation)
        getattr(instance, relation).all().delete()
        for index, row in enumerate(rows):
            child = related.related_model(**row, **{related.field.name: instance})
            try:
                child.full_clean()
            except ValidationError as error:
                raise ValidationError({relation: [f"#{index + 1}: {message}" for message in error.messages]}) from None
            child.save()
    return instance


@transaction.atomic
def world_create(*, owner: User, tags: list[str] | None = None, **values: Any) -> World:
    world = content_save(World(owner=owner, slug=slug_unique(values.get("title", ""))), values)
    world_tags_set(world=world, tags=tags or [])
    return world


@transaction.atomic
def world_update(*, world: World, tags: list[str] | None = None, **values: Any) -> World:
    content_save(world, values)
    if tags is not None:
        world_tags_set(world=world, tags=tags)
    return world


def world_tags_set(*, world: World, tags: list[str]) -> None:
    names = sorted({slugify(tag)[:40] for tag in tags if slugify(tag)})
    if len(names) > 20:
        raise ValidationError({"tags": "a world has at most 20 tags"})
    world.tags.set([Tag.objects.get_or_create(name=name)[0] for name in names])


@transaction.atomic
def world_publish(*, world: World, by: User) -> WorldVersion:
    """Freeze the world as its next version; refused while any reference in it is broken."""
    problems = world_problems(world=world)
    if problems:
        raise ValidationError(problems)
    # Lock the world so that two publishes at once cannot take the same number.
    World.objects.select_for_update().filter(pk=world.pk).first()
    last = world.versions.aggregate(last=models.Max("number"))["last"] or 0
    return WorldVersion.objects.create(world=world, number=last + 1, document=world_document(world), published_by=by)


@transaction.atomic
def world_remix(*, version: WorldVersion, owner: User) -> World:
    """A new working copy of a published version for `owner`, crediting where it came from."""
    document = version.document
    world = world_from_document(document, owner=owner, slug=slug_unique(document["world"]["title"]))
    world.remixed_from = version
    world.save(update_fields=["remixed_from"])
    return world
