"""A published document read as typed facts: every field other apps use, and defaults for hand-written ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worlds.documents import world_document
from worlds.published import PublishedWorld, published_world
from worlds.services import world_publish
from worlds.tests.factories import (
    BeatFactory,
    CharacterFactory,
    HookFactory,
    LorebookFactory,
    StoryFactory,
    WorldFactory,
)

DEMO_CONTENT = Path(__file__).resolve().parents[1] / "demo_content"


@pytest.mark.django_db
def test_it_reads_what_a_version_published() -> None:
    world = WorldFactory(title="Harbour", category="stories", content_rating="teen", world_rules="Fog never lifts.")
    book = LorebookFactory(owner=world.owner)
    eve = CharacterFactory(owner=world.owner, name="Eve", lorebook=book)
    world.characters.add(eve)
    world.lorebooks.add(book)
    HookFactory(world=world)
    BeatFactory(story=StoryFactory(world=world, title="Night"), name="arrival")
    version = world_publish(world=world, by=world.owner)

    published = published_world(version)

    facts = published.world
    assert (facts.title, facts.category, facts.content_rating) == ("Harbour", "stories", "teen")
    assert (facts.engine, facts.engine_parameters) == ("raycaster", world.engine_parameters)
    assert facts.world_rules == "Fog never lifts."
    assert facts.lorebooks == ("lorebook-0",)
    assert [(c.name, c.greeting, c.lorebook) for c in published.characters] == [("Eve", eve.greeting, "lorebook-0")]
    assert published.characters[0].as_published == version.document["characters"][0]
    assert published.character_named("Eve") is published.characters[0]
    assert published.character_named("Nobody") is None
    assert list(published.lorebooks) == ["lorebook-0"]
    assert published.hooks == version.document["hooks"]
    assert [story["title"] for story in published.stories] == ["Night"]


@pytest.mark.django_db
def test_a_world_without_characters_or_stories_reads_as_empty() -> None:
    published = PublishedWorld.of(world_document(WorldFactory()))

    assert (published.characters, published.hooks, published.stories) == ((), [], [])
    assert published.world.cover_image == ""


def test_fields_a_hand_written_document_leaves_out_read_as_the_models_defaults() -> None:
    document = json.loads((DEMO_CONTENT / "frost-ruins.json").read_text())
    del document["world"]["content_rating"], document["world"]["engine"]

    facts = PublishedWorld.of(document).world

    assert (facts.content_rating, facts.engine, facts.cover_image, facts.reference_images) == (
        "everyone",
        "raycaster",
        "",
        (),
    )


def test_every_character_of_a_world_stands_in_the_spec_its_engine_draws() -> None:
    document = json.loads((DEMO_CONTENT / "dark-lighthouse.json").read_text())
    document["characters"].append({"name": "Tomas", "greeting": "Ahoy."})
    spec = PublishedWorld.of(document).engine_spec
    # Eve keeps the coat the creator gave her; Tomas, not placed, stands wherever the engine puts him.
    assert spec["characters"] == [{"name": "Eve", "color": [214, 168, 58]}, {"name": "Tomas"}]
    assert {key: value for key, value in spec.items() if key != "characters"} == {
        key: value for key, value in document["world"]["engine_parameters"].items() if key != "characters"
    }
