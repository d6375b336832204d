"""A world's card is rendered once for what it shows, and again only when what it shows changes."""

from __future__ import annotations

import pytest
from django.db.models import F

from accounts.tests.factories import UserFactory
from gallery import selectors
from gallery.cards import card_html
from gallery.models import Listing
from gallery.services import listing_like
from gallery.templatetags.cards import card
from gallery.tests.listings import listed_quickly

pytestmark = pytest.mark.django_db


def card_of(listing: Listing) -> str:
    return card(selectors.cards(Listing.objects.filter(pk=listing.pk))[0])


def test_a_card_seen_again_is_not_rendered_again() -> None:
    listing = listed_quickly(1)
    card_html.cache_clear()
    first = card_of(listing)
    assert card_of(listing) == first
    assert (card_html.cache_info().misses, card_html.cache_info().hits) == (1, 1)


def test_a_card_shows_a_change_to_what_it_shows_at_once() -> None:
    listing = listed_quickly(1)
    before = card_of(listing)
    assert "0 likes" in before
    listing_like(user=UserFactory(), listing=listing)
    assert "1 like<" in card_of(listing)
    Listing.objects.filter(pk=listing.pk).update(title="Renamed Lantern", play_count=F("play_count") + 2)
    after = card_of(listing)
    assert "Renamed Lantern" in after
    assert "2 plays" in after
    assert "Lantern 1<" not in after
