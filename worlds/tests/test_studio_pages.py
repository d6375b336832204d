"""The studio pages through the Django test client: authoring, inline errors, atomic saves, owners, publishing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from PIL import Image

from accounts.tests.factories import ModeratorFactory, UserFactory
from moderation.services import version_approve
from tests.fixtures import SignIn
from worlds.models import Character, Clue, Hook, Lorebook, Story, World, WorldVersion
from worlds.services import hook_outcome_record, world_publish
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


def world_data(**overrides: Any) -> dict[str, Any]:
    """What the world form posts when a creator fills in its required inputs."""
    return {
        "title": "The drowned harbour",
        "logline": "A harbour under fog where the lighthouse has gone dark.",
        "category": "games",
        "content_rating": "everyone",
        "engine": "raycaster",
        "tags": "harbour, Mystery",
        "seed": "42",
        "size": "20",
        "time_of_day": "night",
        "weather": "rain",
        "fog": "on",
        "sky": "#102030",
        "floor": "#405060",
        "palette_length": "2",
        **{f"palette_{number}": "#aa0000" for number in range(1, 9)},
        "palette_2": "#00bb00",
    } | overrides


def rows_data(prefix: str, rows: list[dict[str, Any]], *, initial: int = 0) -> dict[str, Any]:
    """A formset's POST data: its management form and each row's inputs."""
    data: dict[str, Any] = {
        f"{prefix}-TOTAL_FORMS": str(len(rows)),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "100",
    }
    for index, row in enumerate(rows):
        data |= {f"{prefix}-{index}-{name}": value for name, value in row.items()}
    return data


def character_data(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "Eve",
        "persona": "The lighthouse keeper, patient and watchful.",
        "greeting": "You came in with the fog.",
        "alternate_greetings": "Back again?\n\nThe lamp is still dark.",
        "tags": "keeper, harbour",
        "memory_scope": "player",
        "memory_limit": "50",
        "reply_temperature": "0.7",
        "reply_max_tokens": "80",
        "players_can_view_memories": "on",
    } | overrides


def test_the_studio_lists_only_the_creators_own_work(signed_in: SignIn) -> None:
    creator, other = UserFactory(), UserFactory()
    WorldFactory(owner=creator, title="Mine")
    WorldFactory(owner=other, title="Theirs")
    CharacterFactory(owner=creator, name="Eve")
    LorebookFactory(owner=creator, name="Harbour lore")
    page = signed_in(creator).get(reverse("worlds:studio")).content.decode()
    assert "Mine" in page and "Eve" in page and "Harbour lore" in page
    assert "Theirs" not in page
    for name in ("world_create", "character_create", "lorebook_create"):
        assert reverse(f"worlds:{name}") in page


def test_the_studio_asks_visitors_to_log_in_and_refuses_people_who_cannot_create(signed_in: SignIn) -> None:
    assert Client().get(reverse("worlds:studio")).status_code == 302
    player = UserFactory()
    player.groups.clear()
    assert signed_in(player).get(reverse("worlds:world_create")).status_code == 403


def test_a_creator_creates_a_world_with_tags_and_engine_parameters(signed_in: SignIn) -> None:
    creator = UserFactory()
    eve = CharacterFactory(owner=creator)
    lore = LorebookFactory(owner=creator)
    response = signed_in(creator).post(
        reverse("worlds:world_create"), world_data(characters=[eve.pk], lorebooks=[lore.pk])
    )
    world = World.objects.get(owner=creator)
    assert response.status_code == 302
    assert response["Location"] == reverse("worlds:world", args=[world.pk])
    assert world.slug == "the-drowned-harbour"
    assert sorted(world.tags.values_list("name", flat=True)) == ["harbour", "mystery"]
    assert world.engine_parameters == {
        "seed": 42,
        "size": 20,
        "palette": [[170, 0, 0], [0, 187, 0]],
        "sky": [16, 32, 48],
        "floor": [64, 80, 96],
        "time_of_day": "night",
        "weather": "rain",
        "fog": True,
    }
    assert list(world.characters.all()) == [eve]
    assert list(world.lorebooks.all()) == [lore]


def test_editing_a_world_keeps_the_objects_placed_on_its_map(signed_in: SignIn) -> None:
    tower = {"kind": "tower", "x": 3.5, "y": 4.5}
    world = WorldFactory(engine_parameters={"seed": 7, "size": 16, "objects": [tower]})
    client = signed_in(world.owner)
    page = client.get(reverse("worlds:world", args=[world.pk])).content.decode()
    assert 'name="seed" value="7"' in page
    client.post(reverse("worlds:world", args=[world.pk]), world_data(title="Renamed", seed="8"))
    world.refresh_from_db()
    assert world.title == "Renamed"
    assert (world.engine_parameters["seed"], world.engine_parameters["objects"]) == (8, [tower])


def test_a_world_error_is_shown_beside_its_field_and_in_the_summary_and_nothing_is_saved(signed_in: SignIn) -> None:
    creator = UserFactory()
    response = signed_in(creator).post(reverse("worlds:world_create"), world_data(title="", size="3"))
    page = response.content.decode()
    assert response.status_code == 200
    assert not World.objects.exists()
    assert 'aria-describedby="id_title_error"' in page and 'id="id_title_error"' in page
    assert 'aria-invalid="true"' in page
    assert "2 problems to fix" in page and 'href="#id_size"' in page
    assert "A foggy" not in page and "A harbour under fog where the lighthouse has gone dark." in page  # kept input


def test_a_failed_edit_keeps_the_saved_title_as_the_page_heading(signed_in: SignIn) -> None:
    world = WorldFactory(title="The drowned harbour")
    page = signed_in(world.owner).post(reverse("worlds:world", args=[world.pk]), world_data(title="")).content
    assert "<h1>The drowned harbour</h1>" in page.decode()
    world.refresh_from_db()
    assert world.title == "The drowned harbour"


def test_a_service_error_after_the_world_was_written_rolls_everything_back(signed_in: SignIn) -> None:
    creator = UserFactory()
    too_many = ", ".join(f"tag{number}" for number in range(21))
    page = signed_in(creator).post(reverse("worlds:world_create"), world_data(tags=too_many)).content.decode()
    assert "a world has at most 20 tags" in page
    assert not World.objects.exists()


def test_a_cover_image_is_uploaded_with_the_world_and_a_file_that_is_no_image_is_refused(
    signed_in: SignIn, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    creator = UserFactory()
    client = signed_in(creator)
    fake = SimpleUploadedFile("cover.png", b"<svg onload=alert(1)>", content_type="image/png")
    page = client.post(reverse("worlds:world_create"), world_data(cover_image=fake)).content.decode()
    assert 'id="id_cover_image_error"' in page and not World.objects.exists()
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 40, 40)).save(buffer, format="PNG")
    cover = SimpleUploadedFile("cover.png", buffer.getvalue(), content_type="image/png")
    client.post(reverse("worlds:world_create"), world_data(cover_image=cover))
    world = World.objects.get()
    assert world.cover_image.name.startswith("covers/") and (tmp_path / world.cover_image.name).exists()


def test_a_world_cannot_take_another_creators_character(signed_in: SignIn) -> None:
    creator = UserFactory()
    theirs = CharacterFactory()
    page = signed_in(creator).post(reverse("worlds:world_create"), world_data(characters=[theirs.pk]))
    assert "Select a valid choice" in page.content.decode()
    assert not World.objects.exists()


def test_a_creator_creates_a_character_with_clues(signed_in: SignIn) -> None:
    creator = UserFactory()
    lore = LorebookFactory(owner=creator)
    clues = [
        {
            "name": "the-key",
            "text": "The key hangs under the stairs.",
            "condition": "keyword",
            "condition_value": "key",
        },
        {"name": "", "text": "", "condition": "", "condition_value": ""},  # the blank row a page always offers
    ]
    response = signed_in(creator).post(
        reverse("worlds:character_create"), character_data(lorebook=lore.pk) | rows_data("clues", clues)
    )
    eve = Character.objects.get(owner=creator)
    assert response["Location"] == reverse("worlds:character", args=[eve.pk])
    assert eve.alternate_greetings == ["Back again?", "The lamp is still dark."]
    assert (eve.tags, eve.lorebook, eve.memory_limit) == (["keeper", "harbour"], lore, 50)
    assert list(eve.clues.values_list("name", "condition_value")) == [("the-key", "key")]


def test_a_bad_clue_keeps_the_character_unsaved_and_the_draft_on_the_page(signed_in: SignIn) -> None:
    creator = UserFactory()
    clues = [{"name": "the key!", "text": "", "condition": "keyword", "condition_value": "key"}]
    response = signed_in(creator).post(
        reverse("worlds:character_create"), character_data(persona="My long draft") | rows_data("clues", clues)
    )
    page = response.content.decode()
    assert not Character.objects.exists() and not Clue.objects.exists()
    assert "Clue 1: Name" in page and "Clue 1: Text" in page
    assert "My long draft" in page and 'id="id_clues-0-text_error"' in page


def test_renaming_clues_into_each_other_saves_nothing_at_all(signed_in: SignIn) -> None:
    # Each row is valid alone; the clash only shows when the first is written, after the character was.
    eve = CharacterFactory()
    first, second = ClueFactory(character=eve, name="first"), ClueFactory(character=eve, name="second")
    rows = [
        {"id": first.pk, "name": "second", "text": "a", "condition": "keyword", "condition_value": "a"},
        {"id": second.pk, "name": "first", "text": "b", "condition": "keyword", "condition_value": "b"},
    ]
    response = signed_in(eve.owner).post(
        reverse("worlds:character", args=[eve.pk]), character_data(name="Renamed") | rows_data("clues", rows, initial=2)
    )
    assert response.status_code == 200 and "Nothing was saved" in response.content.decode()
    eve.refresh_from_db()
    assert eve.name == "Eve"
    assert sorted(eve.clues.values_list("name", "text")) == [("first", first.text), ("second", second.text)]


def test_a_clue_can_take_the_name_of_one_deleted_in_the_same_save(signed_in: SignIn) -> None:
    eve = CharacterFactory()
    old, other = ClueFactory(character=eve, name="the-key"), ClueFactory(character=eve, name="the-map")
    rows = [
        {"id": old.pk, "name": "the-key", "text": "x", "condition": "keyword", "condition_value": "x", "DELETE": "on"},
        {"id": other.pk, "name": "the-key", "text": "New", "condition": "keyword", "condition_value": "key"},
    ]
    response = signed_in(eve.owner).post(
        reverse("worlds:character", args=[eve.pk]), character_data() | rows_data("clues", rows, initial=2)
    )
    assert response.status_code == 302
    assert list(eve.clues.values_list("pk", "name", "text")) == [(other.pk, "the-key", "New")]


def test_a_creator_writes_a_lorebook_with_entries_and_deletes_one(signed_in: SignIn) -> None:
    lore = LorebookFactory()
    stale = LoreEntryFactory(lorebook=lore)
    rows = [
        {"id": stale.pk, "keys": "lighthouse", "content": stale.content, "DELETE": "on", **entry_defaults()},
        {"keys": "fog, mist", "secondary_keys": "night", "selective": "on", "content": "Fog hides the rocks."}
        | entry_defaults(),
    ]
    signed_in(lore.owner).post(
        reverse("worlds:lorebook", args=[lore.pk]),
        {"name": "Harbour lore", "scan_depth": "4", "token_budget": "512"} | rows_data("entries", rows, initial=1),
    )
    entry = lore.entries.get()
    assert (entry.keys, entry.secondary_keys, entry.selective) == (["fog", "mist"], ["night"], True)
    assert Lorebook.objects.get().token_budget == 512


def entry_defaults() -> dict[str, Any]:
    return {
        "selective_logic": "and_any",
        "insertion_order": "100",
        "priority": "10",
        "enabled": "on",
        "position": "before_char",
        "probability": "100",
    }


def test_a_lore_entry_needs_keys_unless_it_is_always_on(signed_in: SignIn) -> None:
    creator = UserFactory()
    book = {"name": "Harbour lore", "scan_depth": "4", "token_budget": "1024"}
    rows = [{"keys": "", "content": "The harbour floods at spring tide."} | entry_defaults()]
    page = signed_in(creator).post(reverse("worlds:lorebook_create"), book | rows_data("entries", rows)).content
    assert "needs at least one entry" in page.decode()
    assert not Lorebook.objects.exists()
    rows[0]["constant"] = "on"
    signed_in(creator).post(reverse("worlds:lorebook_create"), book | rows_data("entries", rows))
    assert Lorebook.objects.get().entries.get().constant


def hook_data(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "guardian",
        "trigger": "keywords",
        "keywords": "bridge, cross",
        "presentation": "A stone guardian blocks the bridge and asks for a gift.",
        "fallback_enabled": "on",
    } | overrides


def test_a_creator_creates_a_hook_with_two_branches_and_their_effects(signed_in: SignIn) -> None:
    world = WorldFactory()
    branches = [
        {
            "name": "gift",
            "intent": "the player offers a gift",
            "examples": "I give you my lantern\ntake this coin",
            "set_flags": "guardian_pleased",
            "reveal_clues": "the-key",
            "world_events": ["dawn", "snow"],
            "spawn_object": "lantern",
            "move_to_beat": "far-side",
            "narration": "The guardian steps aside.",
        },
        {"name": "fight", "intent": "the player attacks", "examples": "I draw my sword"},
    ]
    response = signed_in(world.owner).post(
        reverse("worlds:hook_create", args=[world.pk]), hook_data() | rows_data("branches", branches)
    )
    hook = Hook.objects.get(world=world)
    assert response["Location"] == reverse("worlds:hook", args=[hook.pk])
    assert hook.trigger_value == {"keywords": ["bridge", "cross"]}
    gift, fight = hook.branches.all()
    assert gift.examples == ["I give you my lantern", "take this coin"]
    assert gift.effects == {
        "world_events": [{"kind": "dawn"}, {"kind": "snow"}, {"kind": "spawn", "object": "lantern"}],
        "set_flags": ["guardian_pleased"],
        "reveal_clues": ["the-key"],
        "move_to_beat": "far-side",
        "narration": "The guardian steps aside.",
    }
    assert (fight.name, fight.effects) == ("fight", {})


def test_editing_a_branch_shows_its_effects_and_can_clear_them(signed_in: SignIn) -> None:
    branch = HookBranchFactory()
    hook = branch.hook
    client = signed_in(hook.world.owner)
    page = client.get(reverse("worlds:hook", args=[hook.pk])).content.decode()
    assert 'value="guardian_pleased"' in page and 'value="dawn" id="id_branches-0-world_events_1" checked' in page
    row = {"id": branch.pk, "name": "gift", "intent": branch.intent, "examples": "take this coin"}
    client.post(reverse("worlds:hook", args=[hook.pk]), hook_data() | rows_data("branches", [row], initial=1))
    branch.refresh_from_db()
    assert (branch.examples, branch.effects) == (["take this coin"], {})


def test_editing_a_hook_in_the_studio_keeps_its_play_counts(signed_in: SignIn) -> None:
    branch = HookBranchFactory()
    hook = branch.hook
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name="gift")
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name=None)
    row = {"id": branch.pk, "name": "gift", "intent": "the player gives something", "examples": "take this coin"}
    data = hook_data() | rows_data("branches", [row], initial=1)
    assert signed_in(hook.world.owner).post(reverse("worlds:hook", args=[hook.pk]), data).status_code == 302
    branch.refresh_from_db()
    hook.refresh_from_db()
    assert (branch.intent, branch.times_chosen, hook.times_fallen_back) == ("the player gives something", 1, 1)


def test_an_area_trigger_needs_its_radius_and_says_so_beside_the_trigger(signed_in: SignIn) -> None:
    world = WorldFactory()
    data = hook_data(trigger="area", area_x="3", area_y="4", area_radius="") | rows_data("branches", [])
    page = signed_in(world.owner).post(reverse("worlds:hook_create", args=[world.pk]), data).content.decode()
    assert "an area needs numbers x, y and radius" in page
    assert 'aria-describedby="id_trigger_value_error"' in page and 'href="#id_trigger_value"' in page
    assert not Hook.objects.exists()


def test_a_world_cannot_have_two_hooks_of_the_same_name(signed_in: SignIn) -> None:
    hook = HookFactory()
    data = hook_data(name=hook.name) | rows_data("branches", [])
    page = signed_in(hook.world.owner).post(reverse("worlds:hook_create", args=[hook.world.pk]), data).content
    assert "this world already has a hook called guardian" in page.decode()
    assert Hook.objects.count() == 1


def test_a_creator_creates_a_story_with_beats_and_choices(signed_in: SignIn) -> None:
    world = WorldFactory()
    eve = CharacterFactory(owner=world.owner)
    world.characters.add(eve)
    beats = [
        {"name": "arrival", "scene": "Fog at the quay.", "choices": "Climb the stairs -> lamp-room\nLeave -> gone"},
        {"name": "lamp-room", "choices": ""},
        {"name": "gone", "choices": ""},
    ]
    data = {"title": "The dark lighthouse", "start_beat": "arrival", "characters": [eve.pk]}
    response = signed_in(world.owner).post(
        reverse("worlds:story_create", args=[world.pk]), data | rows_data("beats", beats)
    )
    story = Story.objects.get(world=world)
    assert response["Location"] == reverse("worlds:story", args=[story.pk])
    arrival = story.beats.get(name="arrival")
    assert arrival.choices == [{"text": "Climb the stairs", "to": "lamp-room"}, {"text": "Leave", "to": "gone"}]
    assert list(story.characters.all()) == [eve]


def test_a_choice_without_an_arrow_is_refused_with_its_line_number(signed_in: SignIn) -> None:
    world = WorldFactory()
    beats = [{"name": "arrival", "choices": "Climb -> top\nJust leave"}]
    data = {"title": "The dark lighthouse", "start_beat": "arrival"} | rows_data("beats", beats)
    page = signed_in(world.owner).post(reverse("worlds:story_create", args=[world.pk]), data).content.decode()
    assert "line 2: write a choice as" in page
    assert not Story.objects.exists()


def owners_pages() -> list[tuple[str, Any]]:
    """Each owner-only page, and how to reach it from a rich world."""
    return [
        ("worlds:world", lambda world: world.pk),
        ("worlds:world_preview", lambda world: world.pk),
        ("worlds:hook_create", lambda world: world.pk),
        ("worlds:story_create", lambda world: world.pk),
        ("worlds:hook", lambda world: world.hooks.get().pk),
        ("worlds:story", lambda world: world.stories.get().pk),
        ("worlds:character", lambda world: world.characters.get().pk),
        ("worlds:lorebook", lambda world: world.lorebooks.get().pk),
    ]


@pytest.mark.parametrize(("page", "argument"), owners_pages())
def test_another_creator_gets_404_for_someone_elses_working_copy(signed_in: SignIn, page: str, argument: Any) -> None:
    world = WorldFactory()
    world.characters.add(CharacterFactory(owner=world.owner))
    world.lorebooks.add(LorebookFactory(owner=world.owner))
    HookFactory(world=world)
    StoryFactory(world=world)
    url = reverse(page, args=[argument(world)])
    stranger = signed_in(UserFactory())
    assert stranger.get(url).status_code == 404
    assert stranger.post(url, {"title": "Taken"}).status_code in (404, 405)
    assert signed_in(world.owner).get(url).status_code == 200


def test_another_creator_cannot_publish_someone_elses_world(signed_in: SignIn) -> None:
    world = WorldFactory()
    response = signed_in(UserFactory()).post(reverse("worlds:publish", args=[world.pk]))
    assert response.status_code == 404
    assert not WorldVersion.objects.exists()


def test_the_preview_is_a_jpeg_of_the_first_frame_and_follows_the_parameters_given(signed_in: SignIn) -> None:
    world = WorldFactory()
    client = signed_in(world.owner)
    url = reverse("worlds:world_preview", args=[world.pk])
    saved = client.get(url)
    night = client.get(url, {"params": json.dumps({"time_of_day": "night", "sky": [0, 0, 40]})})
    for response in (saved, night):
        assert response.status_code == 200
        assert response["Content-Type"] == "image/jpeg"
        assert response.content.startswith(b"\xff\xd8\xff")
    assert saved.content != night.content


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("{not json", "params must be JSON"),
        ("[1, 2]", "params must be a JSON object"),
        ('{"size": 500}', "size must be an integer 8..64"),
        ('{"sky": "blue"}', "sky must be [r, g, b]"),
        ('{"wind": 3}', "unknown world spec keys: wind"),
        ("x" * 20_000, "params is longer than"),
    ],
)
def test_the_preview_refuses_bad_parameters_with_a_message(signed_in: SignIn, params: str, message: str) -> None:
    world = WorldFactory()
    response = signed_in(world.owner).get(reverse("worlds:world_preview", args=[world.pk]), {"params": params})
    assert response.status_code == 400
    assert message in response.content.decode()


def test_the_world_page_shows_its_preview_hooks_stories_and_problems(signed_in: SignIn) -> None:
    world = WorldFactory()
    hook = HookFactory(world=world)
    HookBranchFactory(hook=hook, effects={"move_to_beat": "nowhere"})
    story = StoryFactory(world=world)
    page = signed_in(world.owner).get(reverse("worlds:world", args=[world.pk])).content.decode()
    assert f'src="{reverse("worlds:world_preview", args=[world.pk])}"' in page
    assert reverse("worlds:hook", args=[hook.pk]) in page and reverse("worlds:story", args=[story.pk]) in page
    assert "moves to beat &#x27;nowhere&#x27;, which no story has" in page


def test_publishing_through_the_page_freezes_a_version_and_lists_it(signed_in: SignIn) -> None:
    world = WorldFactory()
    story = StoryFactory(world=world, start_beat="arrival")
    BeatFactory(story=story, name="arrival")
    client = signed_in(world.owner)
    response = client.post(reverse("worlds:publish", args=[world.pk]), follow=True)
    version = WorldVersion.objects.get(world=world)
    page = response.content.decode()
    assert "Submitted version 1" in page and "for review" in page
    assert reverse("worlds:version", args=[version.pk]) in page


def test_publishing_a_world_with_broken_references_shows_why_and_publishes_nothing(signed_in: SignIn) -> None:
    world = WorldFactory()
    StoryFactory(world=world, start_beat="missing")
    response = signed_in(world.owner).post(reverse("worlds:publish", args=[world.pk]), follow=True)
    assert "Not published: story The dark lighthouse: the start beat" in response.content.decode()
    assert not WorldVersion.objects.exists()


def test_another_creator_remixes_a_published_world_and_the_copy_credits_the_original(signed_in: SignIn) -> None:
    world = WorldFactory(title="The drowned harbour")
    world.characters.add(CharacterFactory(owner=world.owner))
    version = world_publish(world=world, by=world.owner)
    remixer = UserFactory()
    pending = signed_in(remixer).get(reverse("worlds:studio")).content.decode()
    assert reverse("worlds:version", args=[version.pk]) not in pending  # not remixable before it is approved
    version_approve(version=version, moderator=ModeratorFactory())
    client = signed_in(remixer)
    listed = client.get(reverse("worlds:studio")).content.decode()
    assert reverse("worlds:version", args=[version.pk]) in listed
    version_page = client.get(reverse("worlds:version", args=[version.pk])).content.decode()
    assert "Remix this world" in version_page
    response = client.post(reverse("worlds:remix", args=[version.pk]), follow=True)
    remix = World.objects.get(owner=remixer)
    assert response.redirect_chain[-1][0] == reverse("worlds:world", args=[remix.pk])
    page = response.content.decode()
    assert "Remixed from" in page and "The drowned harbour" in page and f"by {world.owner}" in page
    assert remix.characters.get().owner == remixer


def test_a_creator_cannot_remix_their_own_world(signed_in: SignIn) -> None:
    world = WorldFactory()
    version = world_publish(world=world, by=world.owner)
    client = signed_in(world.owner)
    assert "Remix this world" not in client.get(reverse("worlds:version", args=[version.pk])).content.decode()
    assert client.post(reverse("worlds:remix", args=[version.pk])).status_code == 404
    assert World.objects.count() == 1


def test_creators_text_is_escaped_on_every_page(signed_in: SignIn) -> None:
    attack = "<script>alert(1)</script>"
    world = WorldFactory(title=attack, logline=attack)
    hook = HookFactory(world=world, presentation=attack)
    HookBranchFactory(hook=hook, examples=[attack])
    client = signed_in(world.owner)
    pages = [
        reverse("worlds:studio"),
        reverse("worlds:world", args=[world.pk]),
        reverse("worlds:hook", args=[hook.pk]) + "?inputs=" + attack,
    ]
    for url in pages:
        page = client.get(url).content.decode()
        assert attack not in page and "&lt;script&gt;" in page, url


def test_the_forms_are_protected_against_cross_site_posts() -> None:
    world = WorldFactory()
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    assert client.post(reverse("worlds:world", args=[world.pk]), world_data()).status_code == 403
    assert client.post(reverse("worlds:publish", args=[world.pk])).status_code == 403
