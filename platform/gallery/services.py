"""Writes to the gallery: listings follow the live versions moderators approve; likes, follows, plays, settings."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from django.contrib.postgres.search import SearchVector
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import User
from gallery.models import Follow, Like, Listing, Play
from gallery.selectors import LISTINGS_VERSION_KEY
from worlds.models import ReviewStatus, Tag, World, WorldVersion
from worlds.published import published_world

# Trending sums activity with exponential decay: an event counts half as much every half-life. Each event
# adds weight * 2^((time - epoch) / half-life), which orders worlds exactly as the decayed sum at any "now"
# would (every term would be scaled by the same factor), so scores never need recomputing as time passes.
# Scores are kept as log2 of that sum, which stays small for centuries where the sum itself would overflow.
TRENDING_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
TRENDING_HALF_LIFE_HOURS = 72
PLAY_WEIGHT = 1.0
LIKE_WEIGHT = 3.0  # a like is a deliberate act and far rarer than a play


def listings_changed() -> None:
    """What the gallery's lists show has changed: once this transaction commits, the lists are rendered afresh.
    Not before: a page rendered from the rows as they were before the commit would be filed under the new
    version, and shown until it expired."""
    transaction.on_commit(listings_version_next)


def listings_version_next() -> None:
    try:
        cache.incr(LISTINGS_VERSION_KEY)
    except ValueError:
        pass  # no version yet (or it was evicted): the next reader starts one past every earlier number


def trending_event(*, weight: float, at: datetime) -> float:
    return math.log2(weight) + (at - TRENDING_EPOCH).total_seconds() / 3600 / TRENDING_HALF_LIFE_HOURS


@transaction.atomic
def trending_change(*, listing_id: int, weight: float, at: datetime, removed: bool = False) -> None:
    """Add (or, for an undone like, remove) one event to a listing's trending score, in log space."""
    score = Listing.objects.select_for_update().values_list("trending_score", flat=True).get(pk=listing_id)
    event = trending_event(weight=weight, at=at)
    if removed:
        remaining = 1 - 2 ** (event - score) if score > event else 0.0
        score = score + math.log2(remaining) if remaining > 1e-12 else 0.0
    elif score == 0.0:
        score = event
    else:
        score = max(score, event) + math.log2(1 + 2 ** -abs(score - event))
    Listing.objects.filter(pk=listing_id).update(trending_score=score)


def live_version(*, world: World) -> WorldVersion | None:
    return world.versions.filter(status=ReviewStatus.APPROVED).order_by("-number").first()


@transaction.atomic
def listing_refresh(*, world: World) -> Listing | None:
    """Point the world's listing at its live version (its newest approved one), or hide it when there is none."""
    live = live_version(world=world)
    listing = Listing.objects.select_for_update().filter(world=world).first()
    if live is None:
        if listing is not None:
            listing.version, listing.featured_at = None, None
            listing.save(update_fields=["version", "featured_at"])
            listings_changed()
        return listing
    published = published_world(live)
    facts, tags = published.world, published.world.tags
    values = {
        "version": live,
        "creator": world.owner,
        "slug": world.slug,
        "title": facts.title,
        "logline": facts.logline,
        "description": facts.description,
        "category": facts.category,
        "content_rating": facts.content_rating,
        "cover": facts.cover_image,
        "thumbnail": next((check.image.name for check in live.checks.all() if check.image), ""),
        "search_text": " ".join([*tags, *(character.name for character in published.characters)]),
    }
    if listing is None:
        listing = Listing(world=world, listed_at=timezone.now(), **values)
    else:
        for name, value in values.items():
            setattr(listing, name, value)
    listing.save()
    listing.tags.set([Tag.objects.get_or_create(name=name)[0] for name in tags])
    if connection.vendor == "postgresql":
        Listing.objects.filter(pk=listing.pk).update(search_vector=search_vector())
    listings_changed()
    return listing


def search_vector() -> SearchVector:
    """Weights rank a match in the title above one in the logline, tags and characters, then the description."""
    return (
        SearchVector("title", weight="A", config="english")
        + SearchVector("logline", weight="B", config="english")
        + SearchVector("search_text", weight="C", config="english")
        + SearchVector("description", weight="D", config="english")
    )


@transaction.atomic
def listing_feature(*, listing: Listing, featured: bool) -> Listing:
    listing.featured_at = timezone.now() if featured else None
    listing.save(update_fields=["featured_at"])
    listings_changed()
    return listing


@transaction.atomic
def listing_like(*, user: User, listing: Listing) -> bool:
    """Like a listing once; liking again changes nothing. Returns whether this call added the like."""
    try:
        with transaction.atomic():
            like = Like.objects.create(user=user, listing=listing)
    except IntegrityError:
        return False
    Listing.objects.filter(pk=listing.pk).update(like_count=F("like_count") + 1)
    trending_change(listing_id=listing.pk, weight=LIKE_WEIGHT, at=like.created_at)
    listings_changed()
    return True


@transaction.atomic
def listing_unlike(*, user: User, listing: Listing) -> bool:
    like = Like.objects.select_for_update().filter(user=user, listing=listing).first()
    if like is None:
        return False
    like.delete()
    Listing.objects.filter(pk=listing.pk).update(like_count=F("like_count") - 1)
    trending_change(listing_id=listing.pk, weight=LIKE_WEIGHT, at=like.created_at, removed=True)
    listings_changed()
    return True


@transaction.atomic
def world_play_record(*, player: User, world: World, at: datetime | None = None) -> bool:
    """Count a play of a listed world, once per player per day (UTC). Returns whether this one counted.

    Play sessions call this when a session starts; a second session the same day counts nothing. A play does
    not move the cached lists' version on, as a like does: plays come far more often, and would leave no list
    cached for long. Their counts and the trending order they feed show up within views.LIST_SECONDS.
    """
    at = at or timezone.now()
    listing = Listing.objects.filter(world=world, version__isnull=False).first()
    if listing is None:
        return False
    try:
        with transaction.atomic():
            Play.objects.create(player=player, listing=listing, day=at.astimezone(UTC).date())
    except IntegrityError:
        return False
    Listing.objects.filter(pk=listing.pk).update(play_count=F("play_count") + 1)
    trending_change(listing_id=listing.pk, weight=PLAY_WEIGHT, at=at)
    return True


@transaction.atomic
def creator_follow(*, follower: User, creator: User) -> bool:
    if follower == creator:
        return False
    return Follow.objects.get_or_create(follower=follower, creator=creator)[1]


@transaction.atomic
def creator_unfollow(*, follower: User, creator: User) -> bool:
    return Follow.objects.filter(follower=follower, creator=creator).delete()[0] > 0
