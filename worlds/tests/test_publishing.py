"""Publishing freezes a version; the working copy stays editable; remixes rebuild a version for someone else."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from accounts.tests.factories import UserFactory
from moderation.models import CheckKind, QueueItem
from worlds.documents import document_public, world_document
from worlds.models import ReviewStatus, World
from worlds.services import world_publish, world_remix, world_update
from worlds.tests.factories import (
    BeatFactory,
    CharacterFactory,
    ClueFactory,
    HookBranchFactory,
    HookFactory,
    LoreEntryFactory,
    StoryFactory,
    WorldFactory,
)

pytestmark = pytest.mark.django_db


def rich_world() -> World:
    world = WorldFactory()
    eve = CharacterFactory(owner=world.owner, lorebook=LoreEntryFactory(lorebook__owner=world.owner).lorebook)
    ClueFactory(character=eve, name="lamp-secret", condition="beat", condition_value="lamp-room")
    world.characters.add(eve)
    world.lorebooks.add(eve.lorebook)
    story = StoryFactory(world=world, start_beat="arrival")
    story.characters.add(eve)
    BeatFactory(story=story, name="arrival", choices=[{"text": "Climb the stairs", "to": "lamp-room"}])
    BeatFactory(story=story, name="lamp-room", choices=[])
    hook = HookFactory(world=world)
    HookBranchFactory(hook=hook, effects={"move_to_beat": "lamp-room", "reveal_clues": ["the-key"]})
    ClueFactory(character=eve, name="the-key")
    return world


def test_publishing_freezes_numbered_versions() -> None:
    world = rich_world()
    first = world_publish(world=world, by=world.owner)
    world_update(world=world, title="The harbour at night")
    second = world_publish(world=world, by=world.owner)
    assert (first.number, second.number) == (1, 2)
    first.refresh_from_db()
    assert first.document["world"]["title"] != "The harbour at night"
    assert second.document["world"]["title"] == "The harbour at night"


def test_publishing_submits_the_version_for_review_with_its_checks_scheduled(
    django_capture_on_commit_callbacks: Any,
) -> None:
    world = rich_world()
    with django_capture_on_commit_callbacks() as scheduled:
        version = world_publish(world=world, by=world.owner)
    assert version.status == ReviewStatus.PENDING
    assert QueueItem.objects.get(version=version).kind == "submission"
    assert len(scheduled) == len(CheckKind)  # one check task each, sent only once the version is committed


def test_editing_after_publishing_leaves_the_published_version_as_it_was() -> None:
    world = rich_world()
    version = world_publish(world=world, by=world.owner)
    before = version.document
    eve = world.characters.get()
    eve.greeting = "Changed"
    eve.save()
    version.refresh_from_db()
    assert version.document == before
    assert world_document(world) != before


def test_a_broken_reference_blocks_publishing_with_reasons() -> None:
    world = rich_world()
    HookBranchFactory(hook=world.hooks.get(), name="flee", effects={"move_to_beat": "nowhere"})
    with pytest.raises(ValidationError) as caught:
        world_publish(world=world, by=world.owner)
    assert "moves to beat 'nowhere'" in str(caught.value)
    assert not world.versions.exists()


def test_a_story_must_reach_an_ending() -> None:
    world = WorldFactory()
    story = StoryFactory(world=world, start_beat="loop")
    BeatFactory(story=story, name="loop", choices=[{"text": "Again", "to": "loop"}])
    with pytest.raises(ValidationError, match="no ending can be reached"):
        world_publish(world=world, by=world.owner)


def test_a_remix_rebuilds_the_version_for_another_creator_with_credit() -> None:
    world = rich_world()
    version = world_publish(world=world, by=world.owner)
    remixer = UserFactory()
    remix = world_remix(version=version, owner=remixer)
    assert remix.owner == remixer
    assert remix.remixed_from == version
    assert remix.remixed_from.world.owner == world.owner
    assert remix.slug != world.slug
    # Another creator's copy is the public document: what the world keeps from players stays with its creator.
    assert world_document(remix) == document_public(version.document)
    assert remix.characters.get().owner == remixer
    assert remix.characters.get().pk != world.characters.get().pk


def test_a_remix_is_independent_of_the_original() -> None:
    world = rich_world()
    remix = world_remix(version=world_publish(world=world, by=world.owner), owner=UserFactory())
    character = remix.characters.get()
    character.name = "Eve, older"
    character.save()
    assert world.characters.get().name == "Eve"
