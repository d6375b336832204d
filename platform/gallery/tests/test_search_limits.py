"""Search at the edge: words past the limit are refused naming it, anonymous searching is throttled, and a
search the database cannot finish in its budget is stopped rather than left to hold the site up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tests.factories import UserFactory
from common.database import StatementTimedOut, statement_timeout
from gallery import selectors
from gallery.models import Listing

pytestmark = pytest.mark.django_db

TOO_LONG = "fog" * 80  # 240 characters
ON_POSTGRESQL = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="statement_timeout exists only on PostgreSQL"
)


def messages_shown(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


@pytest.mark.parametrize("page", ["gallery:search", "gallery:category"])
def test_the_search_page_refuses_words_past_the_limit_with_a_400_naming_it(page: str) -> None:
    url = reverse("gallery:search") if page == "gallery:search" else reverse("gallery:category", args=["games"])
    response = Client().get(url, {"q": TOO_LONG})
    assert response.status_code == 400
    assert messages_shown(response) == ["Search: Ensure this value has at most 200 characters (it has 240)."]


def test_the_search_api_refuses_words_past_the_limit_with_a_400_naming_it() -> None:
    response = APIClient().get("/api/gallery/worlds/", {"q": TOO_LONG})
    assert response.status_code == 400
    assert response.json() == {"q": ["Ensure this field has no more than 200 characters."]}


def test_anonymous_searches_are_throttled_per_address_across_the_page_and_the_api(
    listed: Callable[..., Listing],
) -> None:
    listed(title="Foghaven")
    page, api = Client(), APIClient()
    answers = [page.get(reverse("gallery:search"), {"q": "fog"}).status_code for _ in range(15)]
    answers += [api.get("/api/gallery/worlds/", {"q": "fog"}).status_code for _ in range(15)]
    assert answers == [200] * 30
    refused_api = api.get("/api/gallery/worlds/", {"q": "fog"})
    assert refused_api.status_code == 429
    assert int(refused_api.headers["Retry-After"]) > 0
    refused_page = page.get(reverse("gallery:search"), {"q": "fog"})
    assert refused_page.status_code == 429
    assert int(refused_page.headers["Retry-After"]) > 0
    [message] = messages_shown(refused_page)
    assert message.startswith("Too many searches from your address: try again in ")
    # Browsing without words, and searching signed in, are not counted.
    assert api.get("/api/gallery/worlds/", {"sort": "new"}).status_code == 200
    assert page.get(reverse("gallery:search")).status_code == 200
    signed_in = Client()
    signed_in.force_login(UserFactory())
    assert signed_in.get(reverse("gallery:search"), {"q": "fog"}).status_code == 200


def test_a_search_the_database_stopped_is_a_503_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def too_slow(**_: Any) -> selectors.Page:
        raise selectors.SearchTooSlow("the search took over 2 s and was stopped")

    monkeypatch.setattr(selectors, "listings_search", too_slow)
    cache.clear()
    api = APIClient().get("/api/gallery/worlds/", {"q": "fog"})
    assert api.status_code == 503
    assert api.json()["detail"].startswith("the search took over 2 s and was stopped")
    page = Client().get(reverse("gallery:search"), {"q": "fog"})
    assert page.status_code == 503
    assert messages_shown(page) == ["Not searched: the search took over 2 s and was stopped. Try again in a moment."]


def test_a_search_runs_under_its_statement_timeout(listed: Callable[..., Listing]) -> None:
    listed(title="Foghaven")
    with CaptureQueriesContext(connection) as queries:
        page = selectors.listings_search(user=AnonymousUser(), query="foghaven")
    assert [listing.title for listing in page.items] == ["Foghaven"]
    budget = [query["sql"] for query in queries if "statement_timeout" in query["sql"]]
    if connection.vendor == "postgresql":
        assert budget == [f"SET LOCAL statement_timeout = {selectors.SEARCH_TIMEOUT_MILLISECONDS}"]
    else:
        assert budget == []  # SQLite has no statement timeout: the block is just a transaction


@ON_POSTGRESQL
def test_postgresql_cancels_a_statement_past_its_budget() -> None:
    started = time.monotonic()
    with pytest.raises(StatementTimedOut), statement_timeout(milliseconds=100):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")
    assert time.monotonic() - started < 2
    with connection.cursor() as cursor:  # the budget ended with its transaction
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"
