"""What the studio tells a creator: review status, thumbnails, characters told apart, a hook's chart."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from PIL import Image

from accounts.tests.factories import ModeratorFactory, UserFactory
from moderation.services import version_approve, version_reject, world_take_down
from tests.fixtures import SignIn
from worlds.models import World, WorldVersion
from worlds.selectors import WorldState, world_review_status, world_titles_casting
from worlds.services import world_publish
from worlds.tests.factories import (
    BeatFactory,
    CharacterFactory,
    HookBranchFactory,
    HookFactory,
    StoryFactory,
    WorldFactory,
)

pytestmark = pytest.mark.django_db


def publishable_world(**values: Any) -> World:
    world = WorldFactory(**values)
    BeatFactory(story=StoryFactory(world=world, start_beat="arrival"), name="arrival")
    return world


def studio_pages_of(world: World) -> list[str]:
    """The world's own page and the pages of its hooks and stories."""
    return [
        reverse("worlds:world", args=[world.pk]),
        reverse("worlds:hook", args=[HookFactory(world=world).pk]),
        reverse("worlds:story", args=[world.stories.get().pk]),
    ]


def test_a_world_never_submitted_is_a_draft(signed_in: SignIn) -> None:
    world = publishable_world()
    assert world_review_status(world=world).state == WorldState.DRAFT
    page = signed_in(world.owner).get(reverse("worlds:world", args=[world.pk])).content.decode()
    assert "status-draft" in page and "Not submitted yet" in page


def test_publishing_says_the_version_was_submitted_for_review_not_published(signed_in: SignIn) -> None:
    world = publishable_world(title="The drowned harbour")
    response = signed_in(world.owner).post(reverse("worlds:publish", args=[world.pk]), follow=True)
    page = response.content.decode()
    assert "Submitted version 1 of “The drowned harbour” for review" in page
    assert "Published version" not in page
    assert "Version 1 is waiting for a moderator" in page


def test_publishing_says_published_when_the_version_went_live_at_once(signed_in: SignIn, monkeypatch: Any) -> None:
    world = publishable_world(title="The drowned harbour")
    moderator = ModeratorFactory()

    def approved_at_once(*, world: World, by: Any) -> WorldVersion:
        version = world_publish(world=world, by=by)
        version_approve(version=version, moderator=moderator)
        return version

    monkeypatch.setattr("worlds.views.world_publish", approved_at_once)
    page = signed_in(world.owner).post(reverse("worlds:publish", args=[world.pk]), follow=True).content.decode()
    assert "Published version 1 of “The drowned harbour”: it is live." in page


def test_every_studio_page_of_a_world_in_review_says_it_is_in_review(signed_in: SignIn) -> None:
    world = publishable_world()
    world_publish(world=world, by=world.owner)
    client = signed_in(world.owner)
    for url in studio_pages_of(world):
        page = client.get(url).content.decode()
        assert "status-in_review" in page and "Version 1 is waiting for a moderator" in page, url


def test_a_rejected_world_shows_the_moderators_reason_on_each_of_its_pages(signed_in: SignIn) -> None:
    world = publishable_world()
    version_reject(
        version=world_publish(world=world, by=world.owner), moderator=ModeratorFactory(), reason="Fix the <rating>"
    )
    assert world_review_status(world=world).state == WorldState.REJECTED
    client = signed_in(world.owner)
    for url in studio_pages_of(world):
        page = client.get(url).content.decode()
        assert "status-rejected" in page and "The moderator's reason: “Fix the &lt;rating&gt;”" in page, url
    assert reverse("moderation:submissions") in page


def test_a_live_world_stays_live_while_a_newer_version_is_refused(signed_in: SignIn) -> None:
    world = publishable_world()
    moderator = ModeratorFactory()
    version_approve(version=world_publish(world=world, by=world.owner), moderator=moderator)
    newer = world_publish(world=world, by=world.owner)
    status = world_review_status(world=world)
    assert (status.state, status.version.number, status.newer) == (WorldState.LIVE, 1, newer)
    version_reject(version=newer, moderator=moderator, reason="The new greeting is too violent")
    page = signed_in(world.owner).get(reverse("worlds:studio")).content.decode()
    assert "status-live" in page and "Version 1 is in the gallery" in page
    assert "Version 2 was not approved. The moderator's reason: “The new greeting is too violent”" in page


def test_a_taken_down_world_says_so_with_the_reason(signed_in: SignIn) -> None:
    world = publishable_world()
    moderator = ModeratorFactory()
    version_approve(version=world_publish(world=world, by=world.owner), moderator=moderator)
    world_take_down(world=world, moderator=moderator, reason="Reported for harassment")
    assert world_review_status(world=world).state == WorldState.TAKEN_DOWN
    page = signed_in(world.owner).get(reverse("worlds:world", args=[world.pk])).content.decode()
    assert "status-taken_down" in page and "“Reported for harassment”" in page


def test_the_versions_list_and_a_version_page_show_each_versions_own_status(signed_in: SignIn) -> None:
    world = publishable_world()
    version = world_publish(world=world, by=world.owner)
    version_reject(version=version, moderator=ModeratorFactory(), reason="Too dark to see anything")
    client = signed_in(world.owner)
    world_page = client.get(reverse("worlds:world", args=[world.pk])).content.decode()
    assert "Submitted versions" in world_page and "Published versions" not in world_page
    version_page = client.get(reverse("worlds:version", args=[version.pk])).content.decode()
    assert "status-rejected" in version_page and "“Too dark to see anything”" in version_page
    assert "submitted" in version_page and "published " not in version_page


def test_the_studio_lists_each_world_with_its_status_and_thumbnail(signed_in: SignIn) -> None:
    draft = publishable_world(title="Draft harbour")
    submitted = publishable_world(owner=draft.owner)
    world_publish(world=submitted, by=draft.owner)
    page = signed_in(draft.owner).get(reverse("worlds:studio")).content.decode()
    for world in (draft, submitted):
        assert reverse("worlds:world_thumbnail", args=[world.pk]) in page
    assert "status-draft" in page and "status-in_review" in page


def test_the_thumbnail_is_the_first_frame_without_a_cover_and_only_for_the_owner(signed_in: SignIn) -> None:
    world = WorldFactory()
    url = reverse("worlds:world_thumbnail", args=[world.pk])
    response = signed_in(world.owner).get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert Image.open(io.BytesIO(response.content)).size == (192, 108)
    assert signed_in(UserFactory()).get(url).status_code == 404


def test_the_thumbnail_is_the_cover_when_the_world_has_one(signed_in: SignIn, settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path
    world = WorldFactory()
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 40, 40)).save(buffer, format="PNG")
    world.cover_image.save("cover.png", ContentFile(buffer.getvalue()))
    response = signed_in(world.owner).get(reverse("worlds:world_thumbnail", args=[world.pk]))
    assert response["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(b"".join(response.streaming_content))).size == (8, 8)


def test_two_characters_of_one_name_are_shown_with_the_worlds_that_cast_them(signed_in: SignIn) -> None:
    creator = UserFactory()
    harbour, forest = WorldFactory(owner=creator, title="Harbour"), WorldFactory(owner=creator, title="Forest")
    harbour.characters.add(CharacterFactory(owner=creator, name="Eve"))
    forest.characters.add(CharacterFactory(owner=creator, name="Eve"))
    CharacterFactory(owner=creator, name="Eve")
    client = signed_in(creator)
    studio = client.get(reverse("worlds:studio")).content.decode()
    assert "in Harbour" in studio and "in Forest" in studio and "in no world yet" in studio
    form = client.get(reverse("worlds:world", args=[harbour.pk])).content.decode()
    assert "Eve (in Harbour)" in form and "Eve (in Forest)" in form and "Eve (in no world yet)" in form


def test_the_world_form_says_a_character_must_exist_before_a_world_can_cast_it(signed_in: SignIn) -> None:
    page = signed_in(UserFactory()).get(reverse("worlds:world_create")).content.decode()
    assert "A world casts characters you have already made" in page
    assert f'<a href="{reverse("worlds:character_create")}">make a character</a>' in page


def test_the_worlds_a_character_is_known_by_are_only_its_live_ones_under_their_live_titles() -> None:
    live, draft = publishable_world(title="Harbour, renamed in a draft"), WorldFactory(title="Secret draft")
    eve = CharacterFactory(owner=live.owner)
    live.characters.add(eve)
    draft.characters.add(eve)
    live_version = world_publish(world=live, by=live.owner)
    version_approve(version=live_version, moderator=ModeratorFactory())
    WorldVersion.objects.filter(pk=live_version.pk).update(document={"world": {"title": "Harbour"}})
    loner = CharacterFactory()
    assert world_titles_casting(character_ids=[eve.pk, loner.pk]) == {eve.pk: ["Harbour"], loner.pk: []}


def test_a_hooks_page_charts_each_branch_with_the_list_as_its_text_equivalent(signed_in: SignIn) -> None:
    hook = HookFactory(times_fallen_back=2)
    HookBranchFactory(hook=hook, name="gift", times_chosen=8)
    HookBranchFactory(hook=hook, name="fight", times_chosen=0)
    page = signed_in(hook.world.owner).get(reverse("worlds:hook", args=[hook.pk])).content.decode()
    chart = page[page.index('<svg class="hook-chart"') : page.index("</svg>")]
    assert 'aria-hidden="true"' in chart
    assert 'width="320"' in chart and 'width="0"' in chart and 'width="80"' in chart  # 8, 0 and 2 of at most 8
    assert ">branch gift<" in chart and ">no branch fit (fallback)<" in chart
    assert "branch gift: chosen 8 times" in page and "the fallback narrated: 2 times" in page
