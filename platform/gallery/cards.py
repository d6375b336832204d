"""A world's card as the gallery's lists show it, rendered once for each thing it can show.

Rendering cards was most of the time of a list nobody had seen yet (a page deeper in a category, a new search),
and the same cards come back on page after page: a world is on its category's pages under each sort, on the home
rows and in searches. A card is kept by what it shows, so a card whose counts, tags or title changed is a new
one, and nothing ever needs to be forgotten for being out of date, only for room.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from gallery.models import Listing
from worlds.models import ContentRating

# About 2 KB of HTML each: a few megabytes a process at most.
CARDS_KEPT = 2048


@dataclass(frozen=True)
class Card:
    """What a listing's card shows: two listings that would look the same have equal cards."""

    slug: str
    title: str
    logline: str
    category: str
    content_rating: str
    creator: str
    play_count: int
    like_count: int
    tag_names: tuple[str, ...]
    # The version the image's URL carries (a new version may have a new image); None when there is no image.
    image_version: int | None

    @property
    def content_rating_label(self) -> str:
        return ContentRating(self.content_rating).label

    @classmethod
    def of(cls, listing: Listing) -> Card:
        return cls(
            slug=listing.slug,
            title=listing.title,
            logline=listing.logline,
            category=listing.category,
            content_rating=listing.content_rating,
            creator=listing.creator.get_username(),
            play_count=listing.play_count,
            like_count=listing.like_count,
            tag_names=tuple(listing.tag_names),
            image_version=listing.version_id if listing.cover or listing.thumbnail else None,
        )


@lru_cache(maxsize=CARDS_KEPT)
def card_html(card: Card) -> SafeString:
    return render_to_string("gallery/_card.html", {"card": card})
