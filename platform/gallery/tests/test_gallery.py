"""The gallery: search ranking, keyset pages, rows, tags, mature gating, likes, follows, plays and trending."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import User
from accounts.services import content_settings_update
from accounts.tests.factories import UserFactory
from gallery import selectors
from gallery.models import Listing
from gallery.selectors import Page, Sort, listings_browse, listings_search
from gallery.services import creator_follow, listing_like, listing_unlike, listings_version_next, world_play_record
from moderation.services import version_approve, world_feature
from worlds.models import WorldVersion
from worlds.services import world_publish, world_remix
from worlds.tests.factories import CharacterFactory, WorldFactory

pytestmark = pytest.mark.django_db


def api_for(user: User | None = None) -> APIClient:
    """A client signed in with a session, so each request reads the person afresh as a real one does
    (force_authenticate would hand every request this same object, with what it had loaded)."""
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def titles(page: Page) -> list[str]:
    return [listing.title for listing in page.items]


def test_search_ranks_title_then_logline_then_tags_and_characters_then_description(
    listed: Callable[..., Listing],
) -> None:
    listed(title="Harbour of Ash", logline="Sailors wait.", description="A lighthouse stands dark.")
    listed(title="The Keeper", logline="A lighthouse keeper waits for ships.")
    listed(title="Lighthouse at the End", logline="Walk the coast.")
    listed(title="Salt Roads", logline="Caravans cross.", tags=("lighthouse",))
    listed(title="Desert Wells", logline="Water is scarce.", description="No ships here.")
    anonymous = AnonymousUser()

    page = listings_search(user=anonymous, query="lighthouse")
    assert titles(page) == ["Lighthouse at the End", "The Keeper", "Salt Roads", "Harbour of Ash"]
    assert titles(listings_search(user=anonymous, query="lighthouse keeper")) == ["The Keeper"]
    assert titles(listings_search(user=anonymous, query="nothing-like-this")) == []


def test_search_finds_a_character_by_name(publish: Callable[..., WorldVersion], moderator: User) -> None:
    world = WorldFactory(title="Quiet Town")
    world.characters.add(CharacterFactory(owner=world.owner, name="Marisol"))
    version_approve(version=publish(world), moderator=moderator)
    results = api_for().get("/api/gallery/worlds/", {"q": "marisol"}).json()["results"]
    assert [card["title"] for card in results] == ["Quiet Town"]


def test_keyset_pages_walk_every_listing_once_with_a_constant_number_of_queries(
    listed: Callable[..., Listing],
) -> None:
    for number in range(7):
        listed(title=f"World {number}", tags=("fog", f"tag-{number}"))
    anonymous = AnonymousUser()
    seen, cursor = [], None
    while True:
        page = listings_browse(user=anonymous, sort=Sort.NEW, cursor=cursor, size=3)
        seen += titles(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [f"World {number}" for number in reversed(range(7))]

    def queries(size: int) -> int:
        with CaptureQueriesContext(connection) as captured:
            page = api_for().get("/api/gallery/worlds/", {"page_size": size, "sort": "top"}).json()
        assert len(page["results"]) == min(size, 7)
        return len(captured)

    assert queries(2) == queries(7)


def test_a_bad_cursor_is_refused_not_an_error(listed: Callable[..., Listing]) -> None:
    listed()
    assert api_for().get("/api/gallery/worlds/", {"cursor": "not-a-cursor"}).status_code == 400
    assert Client().get(reverse("gallery:category", args=["games"]), {"cursor": "@@"}).status_code == 404


def test_tags_filter_a_category_page(listed: Callable[..., Listing]) -> None:
    listed(title="Foghaven", tags=("fog", "harbour"))
    listed(title="Dune Sea", tags=("desert",))
    page = Client().get(reverse("gallery:category", args=["games"]), {"tag": "fog"}).content.decode()
    assert "Foghaven" in page and "Dune Sea" not in page
    cards = api_for().get("/api/gallery/worlds/", {"tag": ["fog", "harbour"]}).json()["results"]
    assert [card["title"] for card in cards] == ["Foghaven"]


def test_the_home_page_shows_what_moderators_feature(listed: Callable[..., Listing], moderator: User) -> None:
    chosen = listed(title="Foghaven")
    listed(title="Dune Sea")
    world_feature(world=chosen.world, moderator=moderator, featured=True)
    home = api_for().get("/api/gallery/home/").json()
    assert [card["title"] for card in home["featured"]] == ["Foghaven"]
    assert {card["title"] for card in home["new"]} == {"Foghaven", "Dune Sea"}
    assert "Featured" in Client().get(reverse("gallery:home")).content.decode()


def test_a_gallery_that_fits_in_one_row_is_shown_once_not_as_three_identical_rows(
    listed: Callable[..., Listing], monkeypatch: pytest.MonkeyPatch
) -> None:
    listed(title="Foghaven")
    listed(title="Dune Sea")
    home = Client().get(reverse("gallery:home")).content.decode()
    assert home.count(">Foghaven</a>") == 1
    assert "Trending" not in home
    monkeypatch.setattr(selectors, "HOME_ROW_SIZE", 2)  # a gallery larger than a row: each row has its order
    listings_version_next()  # the rows drawn at the old size are still cached for LIST_SECONDS
    home = Client().get(reverse("gallery:home")).content.decode()
    assert home.count(">Foghaven</a>") == 3
    assert "Trending" in home


def test_mature_works_show_only_to_players_who_opted_in_and_confirmed_their_age(
    listed: Callable[..., Listing],
) -> None:
    mature = listed(title="Blood Harbour", content_rating="mature", logline="Not for children.")
    listed(title="Calm Harbour")
    player = UserFactory()
    signed_in = Client()
    signed_in.force_login(player)

    def sees_it(client: Client, api: APIClient) -> bool:
        pages = [client.get(reverse("gallery:home")), client.get(reverse("gallery:search"), {"q": "harbour"})]
        shown = ["Blood Harbour" in page.content.decode() for page in pages]
        shown.append(client.get(reverse("gallery:world", args=[mature.slug])).status_code == 200)
        shown.append(api.get(f"/api/gallery/worlds/{mature.slug}/").status_code == 200)
        shown.append(api.get(f"/api/versions/{mature.version_id}/").status_code == 200)
        assert len(set(shown)) == 1, shown  # every way in agrees
        return shown[0]

    assert not sees_it(Client(), api_for())
    assert not sees_it(signed_in, api_for(player))
    refused = api_for(player).put("/api/gallery/settings/", {"show_mature": True}, format="json")
    assert refused.status_code == 400
    assert not sees_it(signed_in, api_for(player))
    signed_in.post(reverse("gallery:settings"), {"show_mature": "on", "adult_confirmed": "on"})
    assert sees_it(signed_in, api_for(player))
    content_settings_update(user=player, show_mature=False, adult_confirmed=True)
    assert not sees_it(signed_in, api_for(player))


def test_a_play_counts_once_per_player_per_day(listed: Callable[..., Listing]) -> None:
    listing = listed()
    player = UserFactory()
    now = timezone.now()
    assert world_play_record(player=player, world=listing.world, at=now)
    assert not world_play_record(player=player, world=listing.world, at=now + timedelta(minutes=5))
    assert world_play_record(player=UserFactory(), world=listing.world, at=now)
    assert world_play_record(player=player, world=listing.world, at=now + timedelta(days=1))
    assert Listing.objects.get(pk=listing.pk).play_count == 3


def test_likes_count_once_and_can_be_taken_back(listed: Callable[..., Listing]) -> None:
    listing = listed()
    player = UserFactory()
    api = api_for(player)
    assert api.post(f"/api/gallery/worlds/{listing.slug}/like/").json() == {"liked": True, "like_count": 1}
    assert api.post(f"/api/gallery/worlds/{listing.slug}/like/").json() == {"liked": True, "like_count": 1}
    assert api.get(f"/api/gallery/worlds/{listing.slug}/").json()["liked"] is True
    assert api.delete(f"/api/gallery/worlds/{listing.slug}/like/").json() == {"liked": False, "like_count": 0}
    assert Listing.objects.get(pk=listing.pk).trending_score == 0.0


def test_trending_prefers_recent_activity_over_more_activity_long_ago(listed: Callable[..., Listing]) -> None:
    old, recent = listed(title="Old favourite"), listed(title="Rising")
    long_ago = timezone.now() - timedelta(days=30)
    for _ in range(20):
        world_play_record(player=UserFactory(), world=old.world, at=long_ago)
    for _ in range(3):
        world_play_record(player=UserFactory(), world=recent.world)
    anonymous = AnonymousUser()
    assert titles(listings_browse(user=anonymous, sort=Sort.TRENDING)) == ["Rising", "Old favourite"]
    assert titles(listings_browse(user=anonymous, sort=Sort.TOP)) in (
        ["Rising", "Old favourite"],
        ["Old favourite", "Rising"],
    )
    listing_like(user=UserFactory(), listing=old)
    assert titles(listings_browse(user=anonymous, sort=Sort.TOP))[0] == "Old favourite"
    listing_unlike(user=UserFactory(), listing=old)  # someone who never liked it changes nothing
    assert Listing.objects.get(pk=old.pk).like_count == 1


def test_the_world_page_shows_what_players_need(listed: Callable[..., Listing], moderator: User) -> None:
    original = listed(title="Foghaven", logline="A harbour in fog.", tags=("fog",))
    remix_world = world_remix(version=original.version, owner=UserFactory())
    version_approve(version=world_publish(world=remix_world, by=remix_world.owner), moderator=moderator)
    creator = UserFactory()
    client = Client()
    client.force_login(creator)
    page = client.get(reverse("gallery:world", args=[remix_world.slug])).content.decode()
    assert "A harbour in fog." in page
    assert f'href="{reverse("gallery:world", args=[original.slug])}"' in page  # remixed from
    assert "Version 1" in page and "fog" in page
    assert reverse("worlds:remix", args=[remix_world.listing.version_id]) in page
    assert reverse("moderation:world_report", args=[remix_world.slug]) in page
    assert f'href="{reverse("play:play", args=[remix_world.slug])}"' in page


def test_a_creator_page_lists_published_works_and_followers(listed: Callable[..., Listing]) -> None:
    listing = listed(title="Foghaven")
    follower = UserFactory()
    assert creator_follow(follower=follower, creator=listing.creator)
    assert not creator_follow(follower=listing.creator, creator=listing.creator)
    page = Client().get(reverse("gallery:creator", args=[listing.creator.username])).content.decode()
    assert "Foghaven" in page and "1 follower" in page
    assert api_for(follower).delete(f"/api/gallery/creators/{listing.creator.username}/follow/").json() == {
        "following": False
    }
    assert api_for().get(f"/api/gallery/creators/{listing.creator.username}/").json()["followers"] == 0


def test_a_player_reports_a_world_from_its_page(listed: Callable[..., Listing]) -> None:
    listing = listed()
    client = Client()
    client.force_login(UserFactory())
    response = client.post(
        reverse("moderation:world_report", args=[listing.slug]), {"subject": "world", "reason": "spam", "note": "Ads."}
    )
    assert response.status_code == 302
    assert listing.world.reports.get().note == "Ads."


def test_the_gallery_and_moderation_apis_are_in_the_schema() -> None:
    paths = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert {
        "/api/gallery/home/",
        "/api/gallery/worlds/",
        "/api/gallery/worlds/{slug}/",
        "/api/gallery/settings/",
        "/api/moderation/queue/",
        "/api/moderation/reports/",
        "/api/moderation/appeals/",
        "/api/moderation/audit/",
    } <= set(paths)
