"""The authoring services: an entity is written with its child rows and links in one transaction."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.models import User
from worlds.models import Character, Clue, HookBranch, Lorebook, LoreEntry, Story, World
from worlds.services import (
    character_create,
    character_update,
    hook_update,
    lorebook_create,
    lorebook_update,
    story_create,
    story_update,
    world_create,
    world_update,
)
from worlds.tests.factories import (
    BeatFactory,
    CharacterFactory,
    ClueFactory,
    HookBranchFactory,
    HookFactory,
    LorebookFactory,
    LoreEntryFactory,
    StoryFactory,
    WorldFactory,
)

pytestmark = pytest.mark.django_db

ENTRY = {"keys": ["lighthouse"], "content": "The lighthouse has been dark since the storm."}


def test_a_character_is_created_with_its_clues(creator: User) -> None:
    eve = character_create(
        owner=creator,
        name="Eve",
        persona="The keeper.",
        greeting="You came in with the fog.",
        clues=[{"name": "the-key", "text": "Under the stairs.", "condition": "keyword", "condition_value": "key"}],
    )

    assert eve.owner == creator
    assert list(eve.clues.values_list("name", "condition_value")) == [("the-key", "key")]


def test_an_update_replaces_the_clues_and_keeps_the_rows_given_as_saved_rows() -> None:
    eve = CharacterFactory()
    kept = ClueFactory(character=eve, name="kept")
    ClueFactory(character=eve, name="dropped")
    kept.text = "Edited."

    character_update(
        character=eve,
        persona="Changed.",
        clues=[kept, {"name": "new", "text": "A new clue.", "condition": "keyword", "condition_value": "lamp"}],
    )

    assert sorted(eve.clues.values_list("name", flat=True)) == ["kept", "new"]
    assert Clue.objects.get(name="kept").pk == kept.pk
    assert Clue.objects.get(name="kept").text == "Edited."
    assert Character.objects.get(pk=eve.pk).persona == "Changed."


def test_an_update_without_children_leaves_them_as_they_are() -> None:
    book = LoreEntryFactory().lorebook

    lorebook_update(lorebook=book, name="Renamed")

    assert book.entries.count() == 1
    assert Lorebook.objects.get(pk=book.pk).name == "Renamed"


def test_a_row_may_take_the_name_of_one_deleted_in_the_same_update() -> None:
    hook = HookFactory()
    old = HookBranchFactory(hook=hook, name="gift")

    hook_update(hook=hook, branches=[{"name": "gift", "intent": "offers a coin", "examples": ["take this coin"]}])

    assert list(hook.branches.values_list("name", "intent")) == [("gift", "offers a coin")]
    assert not HookBranch.objects.filter(pk=old.pk).exists()


def test_a_kept_branch_keeps_its_play_statistics() -> None:
    branch = HookBranchFactory(times_chosen=4)

    hook_update(hook=branch.hook, branches=[branch])

    assert HookBranch.objects.get(pk=branch.pk).times_chosen == 4


def test_a_bad_child_rolls_back_the_whole_update() -> None:
    book = LoreEntryFactory(content="Kept as it was.").lorebook

    with pytest.raises(ValidationError) as refusal:
        lorebook_update(lorebook=book, name="Renamed", entries=[ENTRY, {**ENTRY, "probability": 101}])

    assert refusal.value.message_dict == {"entries": ["#2: is a percentage, 0 to 100"]}
    assert Lorebook.objects.get(pk=book.pk).name == "Harbour lore"
    assert list(LoreEntry.objects.values_list("content", flat=True)) == ["Kept as it was."]


def test_a_bad_child_leaves_no_new_parent_behind(creator: User) -> None:
    with pytest.raises(ValidationError):
        lorebook_create(owner=creator, name="Harbour lore", entries=[ENTRY, {**ENTRY, "keys": []}])

    assert not Lorebook.objects.exists()
    assert not LoreEntry.objects.exists()


def test_a_world_is_created_with_its_links_and_tags(creator: User) -> None:
    eve, book = CharacterFactory(owner=creator), LorebookFactory(owner=creator)

    world = world_create(
        owner=creator, title="Harbour", logline="Fog.", tags=["Fog", "harbour"], characters=[eve], lorebooks=[book]
    )

    assert world.slug == "harbour"
    assert list(world.characters.all()) == [eve]
    assert list(world.lorebooks.all()) == [book]
    assert sorted(world.tags.values_list("name", flat=True)) == ["fog", "harbour"]


def test_a_world_update_replaces_only_the_links_it_is_given() -> None:
    world = WorldFactory()
    eve, book = CharacterFactory(owner=world.owner), LorebookFactory(owner=world.owner)
    world.characters.add(eve)

    world_update(world=world, lorebooks=[book])
    assert list(world.characters.all()) == [eve]

    world_update(world=world, characters=[])
    assert not world.characters.exists()
    assert list(world.lorebooks.all()) == [book]


def test_too_many_tags_roll_back_the_world_and_its_links() -> None:
    world = WorldFactory(title="Harbour")
    eve = CharacterFactory(owner=world.owner)

    with pytest.raises(ValidationError):
        world_update(world=world, title="Renamed", characters=[eve], tags=[f"tag-{number}" for number in range(21)])

    assert World.objects.get(pk=world.pk).title == "Harbour"
    assert not world.characters.exists()


def test_a_story_is_written_with_its_beats_and_characters() -> None:
    world = WorldFactory()
    eve = CharacterFactory(owner=world.owner)

    story = story_create(
        world=world, title="Night", start_beat="arrival", characters=[eve], beats=[{"name": "arrival"}]
    )
    assert list(story.characters.all()) == [eve]
    assert list(story.beats.values_list("name", flat=True)) == ["arrival"]

    story_update(story=story, characters=[], beats=[{"name": "departure"}])
    assert not story.characters.exists()
    assert list(story.beats.values_list("name", flat=True)) == ["departure"]


def test_a_bad_beat_leaves_the_story_and_its_links_unchanged() -> None:
    story = StoryFactory()
    BeatFactory(story=story, name="arrival")
    eve = CharacterFactory(owner=story.world.owner)

    with pytest.raises(ValidationError) as refusal:
        story_update(story=story, characters=[eve], beats=[{"name": "arrival", "choices": "not a list"}])

    assert list(refusal.value.message_dict) == ["beats"]
    assert not Story.objects.get(pk=story.pk).characters.exists()
    assert list(story.beats.values_list("name", flat=True)) == ["arrival"]
