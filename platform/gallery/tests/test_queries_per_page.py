"""Each gallery page costs the same number of queries whatever the number of worlds (no query per card)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django.fixtures import Settings

from accounts.tests.factories import UserFactory
from gallery.tests.listings import listed_quickly

PAGES = {
    "home": lambda: (reverse("gallery:home"), {}),
    "category": lambda: (reverse("gallery:category", args=["games"]), {}),
    "search": lambda: (reverse("gallery:search"), {"q": "lantern"}),
    "api listing": lambda: ("/api/gallery/worlds/", {}),
    "api search": lambda: ("/api/gallery/worlds/", {"q": "lantern"}),
}


@pytest.fixture
def cache_of_nothing(settings: Settings) -> None:
    """Every read computed afresh, so that counting queries counts the listings' own, not a cache hit."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}


def queries_for(client: Client, page: str) -> int:
    path, query = PAGES[page]()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, query)
    assert response.status_code == 200, response.content[:500]
    return len(captured)


@pytest.mark.django_db
@pytest.mark.usefixtures("cache_of_nothing")
@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed in"])
@pytest.mark.parametrize("page", list(PAGES))
def test_a_gallery_page_costs_the_same_queries_with_5_and_with_50_worlds(
    page: str, signed_in: bool, django_assert_num_queries: Any
) -> None:
    client = Client()
    if signed_in:
        client.force_login(UserFactory())
    for number in range(5):
        listed_quickly(number)
    with_five = queries_for(client, page)
    for number in range(5, 50):
        listed_quickly(number)
    path, query = PAGES[page]()
    with django_assert_num_queries(with_five):
        response = client.get(path, query)
    assert "Lantern 49" in response.content.decode()  # the newest world: the page lists what it was counted with
