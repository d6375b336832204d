"""A moderation action sends the moderator back only to a page of this site, whatever `next` was posted."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from accounts.models import User
from common.redirects import next_url_or
from gallery.models import Listing

OFF_SITE = [
    "https://evil.example/phish",
    "//evil.example/phish",
    "/\\evil.example/phish",
    "\\\\evil.example",
    "https:evil.example",
    "javascript:alert(1)",
    " //evil.example",
    "http://testserver.evil.example/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("next_url", OFF_SITE)
def test_a_moderation_action_never_redirects_off_site(
    next_url: str, listed: Callable[..., Listing], moderator: User
) -> None:
    listing = listed(title="Foghaven")
    client = Client()
    client.force_login(moderator)
    response = client.post(reverse("moderation:world_act", args=[listing.world_id, "feature"]), {"next": next_url})
    assert response.status_code == 302
    assert response.headers["Location"] == reverse("moderation:queue")


@pytest.mark.django_db
def test_a_moderation_action_goes_back_to_the_page_it_came_from(
    listed: Callable[..., Listing], moderator: User
) -> None:
    listing = listed(title="Foghaven")
    client = Client()
    client.force_login(moderator)
    item_page = reverse("moderation:audit")
    response = client.post(reverse("moderation:world_act", args=[listing.world_id, "feature"]), {"next": item_page})
    assert response.headers["Location"] == item_page


@given(st.text(max_size=60) | st.sampled_from(OFF_SITE).map(lambda url: url + "/x"))
def test_next_url_or_gives_only_a_url_on_this_site(wanted: str) -> None:
    request = RequestFactory().post("/moderation/", {"next": wanted})
    chosen = next_url_or(request, "/moderation/")
    parts = urlsplit(chosen.replace("\\", "/"))
    assert chosen == "/moderation/" or chosen == wanted
    assert parts.netloc in ("", "testserver")
    assert parts.scheme in ("", "http")
