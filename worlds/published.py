"""A published version's document read once into the typed facts other apps use: the gallery lists them,
moderation queues and checks them, play starts sessions from them.

The document (worlds.documents.world_document) stays the frozen record; this is how it is read outside
authoring, so no app depends on its keys. A hand-written document (the demo content) may leave fields out:
they read as the models' defaults. What a worker plays from (a character's fields, the hooks, a story, the
lorebooks) is kept as the document has it, since the worker is sent those pieces unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from worlds.categories import Category
from worlds.models import ContentRating, WorldVersion


@dataclass(frozen=True)
class PublishedWorldFacts:
    """The world itself: its card in the gallery, its place in the review queue, how play runs it."""

    title: str
    logline: str
    description: str
    category: str
    content_rating: str
    engine: str
    engine_parameters: dict[str, Any]
    world_rules: str
    cover_image: str  # a storage name, empty when there is none
    reference_images: tuple[str, ...]
    tags: tuple[str, ...]
    lorebooks: tuple[str, ...]  # keys of the document's lorebooks that belong to the world

    @classmethod
    def of(cls, world: Mapping[str, Any]) -> PublishedWorldFacts:
        return cls(
            title=world.get("title", ""),
            logline=world.get("logline", ""),
            description=world.get("description", ""),
            category=world.get("category", Category.GAMES.value),
            content_rating=world.get("content_rating", ContentRating.EVERYONE.value),
            engine=world.get("engine", "raycaster"),
            engine_parameters=world.get("engine_parameters", {}),
            world_rules=world.get("world_rules", ""),
            cover_image=world.get("cover_image", ""),
            reference_images=tuple(world.get("reference_images", [])),
            tags=tuple(world.get("tags", [])),
            lorebooks=tuple(world.get("lorebooks", [])),
        )


@dataclass(frozen=True)
class PublishedCharacter:
    """A character as players meet it; `as_published` is all of it, for the worker that plays it."""

    name: str
    greeting: str
    portrait: str  # a storage name, empty when there is none
    lorebook: str | None  # the key of its lorebook in the document
    as_published: Mapping[str, Any]

    @classmethod
    def of(cls, character: Mapping[str, Any]) -> PublishedCharacter:
        return cls(
            name=character.get("name", ""),
            greeting=character.get("greeting", ""),
            portrait=character.get("portrait") or "",
            lorebook=character.get("lorebook") or None,
            as_published=character,
        )


@dataclass(frozen=True)
class PublishedWorld:
    """A published world: its facts, its characters, and the pieces a worker plays it from."""

    world: PublishedWorldFacts
    characters: tuple[PublishedCharacter, ...]
    lorebooks: Mapping[str, Mapping[str, Any]]  # by key, as worlds.interchange.lorebook_from_document reads one
    hooks: list[dict[str, Any]]
    stories: list[dict[str, Any]]

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> PublishedWorld:
        return cls(
            world=PublishedWorldFacts.of(document["world"]),
            characters=tuple(PublishedCharacter.of(character) for character in document.get("characters", [])),
            lorebooks={book["key"]: book for book in document.get("lorebooks", [])},
            hooks=document.get("hooks", []),
            stories=document.get("stories", []),
        )

    @property
    def engine_spec(self) -> dict[str, Any]:
        """The spec an engine draws the world from: the creator's parameters, with every character of the world
        standing in it (where the parameters place them, else where the engine puts them: before the player)."""
        parameters = self.world.engine_parameters
        placed = parameters.get("characters", [])
        named = {item.get("name") for item in placed if isinstance(item, Mapping)}
        unplaced = [{"name": character.name} for character in self.characters if character.name not in named]
        return {**parameters, "characters": [*placed, *unplaced]} if placed or unplaced else dict(parameters)

    def character_named(self, name: str) -> PublishedCharacter | None:
        return next((character for character in self.characters if character.name == name), None)


def published_world(version: WorldVersion) -> PublishedWorld:
    """What `version` published, read from its document."""
    return PublishedWorld.of(version.document)
