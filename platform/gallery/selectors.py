"""Reads for the gallery: what a person may see, pages of listings by keyset, ranked search, one world, a creator.

Every page is one query for its listings and one for their tags, whatever its size: keyset pagination
(a cursor holding the last row's sort value and id) reads from an index instead of counting past an offset,
so page 500 costs what page 1 does.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import reduce
from operator import add
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.core.cache import cache
from django.db import connection
from django.db.models import Case, Count, Exists, F, FloatField, OuterRef, Q, QuerySet, Value, When
from django.http import Http404

from accounts.models import User
from accounts.selectors import sees_mature
from common.database import StatementTimedOut, statement_timeout
from gallery.models import Follow, Like, Listing
from worlds.models import ContentRating, ReviewStatus, WorldVersion

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 20
HOME_ROW_SIZE = 8
MAX_QUERY_TERMS = 8
# Search words longer than this are refused at the edge (the page's form, the API's serializer), naming it.
MAX_QUERY_LENGTH = 200
# A search statement PostgreSQL has not finished by then is cancelled: a crowd of odd searches must not hold
# the database (and /healthz behind it) for seconds each. The bound is far above what a ranked search needs.
SEARCH_TIMEOUT_MILLISECONDS = 2000
POPULAR_TAGS_SECONDS = 300
# The number every cached rendering of a gallery list is filed under (gallery.views); a change to what the lists
# show moves it on (gallery.services.listings_changed), so the next page renders them afresh.
LISTINGS_VERSION_KEY = "gallery:listings-version"
# The SQLite fallback ranks like PostgreSQL's default weights for A, B, C and D (1, 0.4, 0.2, 0.1).
FALLBACK_WEIGHTS = {"title": 10, "logline": 4, "search_text": 2, "description": 1}


class Sort(StrEnum):
    TRENDING = "trending"
    NEW = "new"
    TOP = "top"


SORT_FIELDS = {Sort.TRENDING: "trending_score", Sort.NEW: "listed_at", Sort.TOP: "like_count"}


class BadCursor(ValueError):
    pass


class SearchTooSlow(Exception):
    """The search ran past SEARCH_TIMEOUT_MILLISECONDS and was cancelled."""


@dataclass(frozen=True)
class Page:
    items: list[Listing]
    next_cursor: str | None


def listings_visible(*, user: User | AnonymousUser) -> QuerySet[Listing]:
    """Listed worlds (a live version, not taken down), without mature ones unless the person opted in."""
    listings = Listing.objects.filter(version__isnull=False)
    if not sees_mature(user=user):
        listings = listings.exclude(content_rating=ContentRating.MATURE)
    return listings


def tag_names_attached(listings: list[Listing]) -> list[Listing]:
    """Each listing with `tag_names`, sorted, read in one query of names for all of them: prefetching the tags
    made a model for every tag and a manager for every listing."""
    names: dict[int, list[str]] = {listing.pk: [] for listing in listings}
    pairs = Listing.tags.through.objects.filter(listing_id__in=names).order_by("tag__name")
    for listing_id, name in pairs.values_list("listing_id", "tag__name"):
        names[listing_id].append(name)
    for listing in listings:
        listing.tag_names = names[listing.pk]
    return listings


def cards(listings: QuerySet[Listing]) -> list[Listing]:
    """The listings as cards show them: with their creator and their tag names."""
    return tag_names_attached(list(listings.select_related("creator")))


def cursor_encode(value: Any, pk: int) -> str:
    raw = json.dumps([value.isoformat() if isinstance(value, datetime) else value, pk])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def cursor_decode(cursor: str, *, is_datetime: bool) -> tuple[Any, int]:
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return (datetime.fromisoformat(value) if is_datetime else float(value)), int(pk)
    except (binascii.Error, ValueError, TypeError) as error:
        raise BadCursor("the cursor is not one this list gave out") from error


def keyset_page(listings: QuerySet[Listing], *, field: str, cursor: str | None, size: int) -> Page:
    """Rows in descending (field, id) order after the cursor's row; one query, plus the tags' prefetch."""
    size = max(1, min(size, MAX_PAGE_SIZE))
    if cursor:
        value, pk = cursor_decode(cursor, is_datetime=field == "listed_at")
        # The first condition alone is what lets the index seek; the second breaks ties by id.
        listings = listings.filter(**{f"{field}__lte": value}).filter(Q(**{f"{field}__lt": value}) | Q(pk__lt=pk))
    rows = cards(listings.order_by(f"-{field}", "-pk")[: size + 1])
    items = rows[:size]
    next_cursor = cursor_encode(getattr(items[-1], field), items[-1].pk) if len(rows) > size else None
    return Page(items=items, next_cursor=next_cursor)


def listings_filtered(
    *, user: User | AnonymousUser, category: str | None = None, tags: Sequence[str] = ()
) -> QuerySet[Listing]:
    listings = listings_visible(user=user)
    if category:
        listings = listings.filter(category=category)
    for tag in tags:
        listings = listings.filter(tags__name=tag)
    return listings


def listings_browse(
    *,
    user: User | AnonymousUser,
    category: str | None = None,
    tags: Sequence[str] = (),
    sort: Sort = Sort.TRENDING,
    cursor: str | None = None,
    size: int = DEFAULT_PAGE_SIZE,
) -> Page:
    listings = listings_filtered(user=user, category=category, tags=tags)
    return keyset_page(listings, field=SORT_FIELDS[sort], cursor=cursor, size=size)


def listings_search(
    *,
    user: User | AnonymousUser,
    query: str,
    category: str | None = None,
    tags: Sequence[str] = (),
    cursor: str | None = None,
    size: int = DEFAULT_PAGE_SIZE,
) -> Page:
    """Listings matching every word of `query`, best match first: a title match outranks a logline match,
    which outranks tags and character names, then the description. PostgreSQL's full-text search (stemmed
    English, GIN index) in production; on SQLite the same weights over substring matches."""
    terms = query.split()[:MAX_QUERY_TERMS]
    listings = listings_filtered(user=user, category=category, tags=tags)
    if not terms:
        return Page(items=[], next_cursor=None)
    if connection.vendor == "postgresql":
        search = SearchQuery(" ".join(terms), config="english", search_type="websearch")
        ranked = listings.filter(search_vector=search).annotate(rank=SearchRank(F("search_vector"), search))
    else:
        for term in terms:
            listings = listings.filter(
                reduce(Q.__or__, (Q(**{f"{name}__icontains": term}) for name in FALLBACK_WEIGHTS))
            )
        scores = [
            Case(When(**{f"{name}__icontains": term}, then=Value(float(weight))), default=Value(0.0))
            for term in terms
            for name, weight in FALLBACK_WEIGHTS.items()
        ]
        ranked = listings.annotate(rank=reduce(add, scores, Value(0.0, output_field=FloatField())))
    try:
        with statement_timeout(milliseconds=SEARCH_TIMEOUT_MILLISECONDS):
            return keyset_page(ranked, field="rank", cursor=cursor, size=size)
    except StatementTimedOut as error:
        raise SearchTooSlow(f"the search took over {SEARCH_TIMEOUT_MILLISECONDS // 1000} s and was stopped") from error


def home_rows(*, user: User | AnonymousUser) -> dict[str, list[Listing]]:
    """The home page's rows: featured (moderators' picks), trending, new and top, a few each."""
    visible = listings_visible(user=user)
    rows = {"featured": cards(visible.filter(featured_at__isnull=False).order_by("-featured_at")[:HOME_ROW_SIZE])}
    for sort in Sort:
        rows[sort.value] = keyset_page(visible, field=SORT_FIELDS[sort], cursor=None, size=HOME_ROW_SIZE).items
    return rows


def listings_version() -> int:
    """The lists' current version. One lost (the cache flushed or evicted) starts again from the clock in
    nanoseconds, past every number handed out before (each change adds one), so no list cached under an
    earlier number is served again."""
    return cache.get_or_set(LISTINGS_VERSION_KEY, time.time_ns, timeout=None)


def tags_popular(*, user: User | AnonymousUser, category: str | None = None, limit: int = 12) -> list[str]:
    """The most used tags among what the person may see. Counting scans every listing in the category (the
    slowest query of a gallery page), and the answer changes slowly, so it is cached."""
    mature = sees_mature(user=user)

    def counted() -> list[str]:
        rows = listings_filtered(user=user, category=category).values("tags__name").exclude(tags__name=None)
        rows = rows.annotate(uses=Count("pk")).order_by("-uses", "tags__name")
        return [row["tags__name"] for row in rows[:limit]]

    return cache.get_or_set(f"gallery:tags:{category or 'all'}:{int(mature)}:{limit}", counted, POPULAR_TAGS_SECONDS)


def listing_for_page(*, user: User | AnonymousUser, slug: str) -> Listing:
    """One listed world as its page shows it, with whether the person likes it; 404 when they may not see it."""
    listings = listings_visible(user=user).select_related("creator", "version", "world__remixed_from__world")
    if user.is_authenticated:
        listings = listings.annotate(liked=Exists(Like.objects.filter(listing=OuterRef("pk"), user=user)))
    listing = listings.filter(slug=slug).first()
    if listing is None:
        raise Http404("No such world in the gallery")
    return tag_names_attached([listing])[0]


def versions_public(*, listing: Listing) -> list[WorldVersion]:
    return list(
        listing.world.versions.filter(status=ReviewStatus.APPROVED).only("id", "number", "published_at", "world_id")
    )


def remixed_from_visible(*, user: User | AnonymousUser, listing: Listing) -> Listing | None:
    """The listing of the world this one was remixed from, when that one is still in the gallery for this person."""
    original = listing.world.remixed_from
    if original is None:
        return None
    return listings_visible(user=user).filter(world_id=original.world_id).first()


@dataclass(frozen=True)
class CreatorProfile:
    creator: User
    works: list[Listing]
    followers: int
    following: bool


def creator_profile(*, user: User | AnonymousUser, username: str) -> CreatorProfile:
    creator = User.objects.filter(username=username, is_active=True).first()
    if creator is None:
        raise Http404("No such creator")
    works = cards(listings_visible(user=user).filter(creator=creator).order_by("-listed_at", "-pk"))
    followers = Follow.objects.filter(creator=creator).count()
    following = user.is_authenticated and Follow.objects.filter(follower=user, creator=creator).exists()
    return CreatorProfile(creator=creator, works=works, followers=followers, following=following)
