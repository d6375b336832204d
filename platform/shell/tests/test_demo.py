"""The demo content `make run` loads is complete, valid and published, and loading it twice changes nothing."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from accounts.models import User
from play.services import session_start
from worlds.categories import Category
from worlds.models import Character, Hook, ReviewStatus, Story, World

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo() -> None:
    call_command("load_demo", "--allow-production", stdout=io.StringIO())


@pytest.mark.usefixtures("demo")
def test_every_gallery_category_has_a_published_demo_world() -> None:
    for category in Category:
        world = World.objects.get(category=category, owner__username="demo-creator")
        assert world.versions.count() == 1
        version = world.versions.get()
        assert (version.status, version.reviewed_by.username) == (ReviewStatus.APPROVED, "demo-moderator")
        assert world.listing.version == version  # so the gallery shows it


@pytest.mark.usefixtures("demo")
def test_the_demo_games_and_stories_play_on_our_world_model() -> None:
    player = User.objects.get(username="demo-player")
    for category in (Category.GAMES, Category.STORIES):
        world = World.objects.get(category=category, owner__username="demo-creator")
        version = world.versions.get()
        assert (world.engine, version.document["world"]["engine"]) == ("worldmodel", "worldmodel")
        assert session_start(version=version, owner=player).engine == "worldmodel"


@pytest.mark.usefixtures("demo")
def test_the_demo_story_has_six_beats_and_two_reachable_endings() -> None:
    story = Story.objects.get(title="The Dark Lighthouse")
    beats = {beat.name: beat for beat in story.beats.all()}
    assert len(beats) >= 6
    endings = {name for name, beat in beats.items() if beat.is_ending}
    assert len(endings) == 2
    reached, frontier = set(), [story.start_beat]
    while frontier:
        name = frontier.pop()
        if name not in reached:
            reached.add(name)
            frontier += [choice["to"] for choice in beats[name].choices]
    assert endings <= reached


@pytest.mark.usefixtures("demo")
def test_the_demo_guardian_hook_has_two_branches_and_a_live_fallback() -> None:
    hook = Hook.objects.get(name="causeway-guardian")
    assert hook.branches.count() == 2
    assert hook.fallback_enabled


@pytest.mark.usefixtures("demo")
def test_eve_remembers_players_and_reveals_clues_as_the_story_advances() -> None:
    eve = Character.objects.get(name="Eve", worlds__title="The Dark Lighthouse")
    assert eve.memory_scope == "player"
    assert eve.clues.filter(condition="beat").exists()
    assert eve.lorebook.entries.count() >= 3


@pytest.mark.usefixtures("demo")
def test_loading_the_demo_again_creates_nothing_new() -> None:
    counts = (World.objects.count(), Character.objects.count(), Story.objects.count())
    call_command("load_demo", "--allow-production", stdout=io.StringIO())
    assert (World.objects.count(), Character.objects.count(), Story.objects.count()) == counts
