"""Gallery lists are rendered once and shared through the cache: never with one person's things, never past a change."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import User
from accounts.services import content_settings_update
from accounts.tests.factories import UserFactory
from gallery.models import Listing
from gallery.services import listing_like
from moderation.services import version_approve, world_feature, world_take_down
from tests.fixtures import SignIn
from worlds.models import WorldVersion
from worlds.tests.factories import WorldFactory

pytestmark = pytest.mark.django_db

LISTS = {
    "home": lambda: reverse("gallery:home"),
    "category": lambda: reverse("gallery:category", args=["games"]),
    "search": lambda: f"{reverse('gallery:search')}?q=harbour",
}
FORM_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.mark.parametrize("page", list(LISTS))
def test_a_list_rendered_for_one_person_shows_no_one_else_their_name_their_token_or_mature_worlds(
    page: str, listed: Callable[..., Listing], signed_in: SignIn
) -> None:
    listed(title="Blood Harbour", content_rating="mature", logline="Not for children.")
    listed(title="Calm Harbour")
    adult = UserFactory(username="adult-reader")
    content_settings_update(user=adult, show_mature=True, adult_confirmed=True)
    path = LISTS[page]()

    first = Client().get(path).content.decode()  # rendered for nobody in particular, and cached
    assert "Calm Harbour" in first and "Blood Harbour" not in first
    for_adult = signed_in(adult).get(path).content.decode()
    assert "Blood Harbour" in for_adult and "adult-reader" in for_adult
    adult_tokens = set(FORM_TOKEN.findall(for_adult))
    assert adult_tokens  # the log-out form's

    for reader, name in [(signed_in(UserFactory(username="young-reader")), "young-reader"), (Client(), None)]:
        shown = reader.get(path).content.decode()
        assert "Calm Harbour" in shown
        assert "Blood Harbour" not in shown
        assert "adult-reader" not in shown
        assert not adult_tokens & set(FORM_TOKEN.findall(shown))
        assert name is None or f"<strong>{name}</strong>" in shown


def test_an_empty_category_invites_only_the_creator_who_asked_to_the_studio(signed_in: SignIn) -> None:
    path = reverse("gallery:category", args=["live"])
    assert "Open the studio" in signed_in(UserFactory()).get(path).content.decode()  # people sign up as creators
    assert "Open the studio" not in Client().get(path).content.decode()


def test_a_list_seen_again_comes_from_the_cache_without_a_query(listed: Callable[..., Listing]) -> None:
    listed(title="Foghaven")
    path = LISTS["category"]()
    Client().get(path)
    with CaptureQueriesContext(connection) as captured:
        assert "Foghaven" in Client().get(path).content.decode()
    assert len(captured) == 0, [query["sql"] for query in captured]


def test_a_list_seen_again_by_a_signed_in_person_costs_two_queries_for_who_they_are(
    listed: Callable[..., Listing], signed_in: SignIn
) -> None:
    listed(title="Foghaven")
    path = LISTS["category"]()
    client = signed_in(UserFactory())
    client.get(path)
    with CaptureQueriesContext(connection) as captured:
        assert "Foghaven" in client.get(path).content.decode()
    # The person with their content settings (which lists they see), then their permissions (the navigation
    # shows their roles); nothing more for the second, third or fourth look at what they may see.
    assert len(captured) == 2, [query["sql"] for query in captured]


def test_each_change_to_the_listings_shows_on_the_next_page(
    listed: Callable[..., Listing],
    publish: Callable[..., WorldVersion],
    moderator: User,
    django_capture_on_commit_callbacks: Any,
) -> None:
    foghaven = listed(title="Foghaven")
    path = LISTS["category"]()

    def shown() -> str:
        return Client().get(path).content.decode()

    assert "Foghaven" in shown()
    # Written behind the services' back, a change is not seen: the page is the cached one...
    Listing.objects.filter(pk=foghaven.pk).update(logline="Rewritten in place.")
    assert "Rewritten in place." not in shown()

    # ...while each change made through them is on the very next page.
    with django_capture_on_commit_callbacks(execute=True):
        version_approve(version=publish(WorldFactory(title="Dune Sea")), moderator=moderator)
    assert "Dune Sea" in shown()
    with django_capture_on_commit_callbacks(execute=True):
        listing_like(user=UserFactory(), listing=foghaven)
    assert "1 like<" in shown()
    with django_capture_on_commit_callbacks(execute=True):
        world_feature(world=foghaven.world, moderator=moderator, featured=True)
    assert "Featured" in Client().get(LISTS["home"]()).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        world_take_down(world=foghaven.world, moderator=moderator, reason="Copied from another creator.")
    assert "Foghaven" not in shown()
    assert "Dune Sea" in shown()
