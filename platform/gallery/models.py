"""The gallery's own rows: listings of live worlds, likes, follows, daily plays, and players' content settings."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models

from worlds.categories import Category
from worlds.models import ContentRating, Tag, World, WorldVersion

LISTED = models.Q(version__isnull=False)


class Listing(models.Model):
    """A world as the gallery shows it: its live version's title, tags and counters, ready to list fast.

    The fields come from the live version's document, not the working copy, so drafts never leak into the
    gallery. `version` is None while nothing of the world is public (never approved, or taken down); the
    row stays so that likes and plays survive a takedown and a restore.
    """

    world = models.OneToOneField(World, on_delete=models.CASCADE, related_name="listing")
    version = models.ForeignKey(WorldVersion, null=True, on_delete=models.SET_NULL, related_name="+")
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="listings")
    slug = models.SlugField(max_length=140, unique=True)  # the world's, copied so a card needs no join
    title = models.CharField(max_length=120)
    logline = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    category = models.CharField(max_length=12, choices=Category.choices)
    content_rating = models.CharField(max_length=8, choices=ContentRating.choices)
    tags = models.ManyToManyField(Tag, blank=True, related_name="listings")
    # Attached by gallery.selectors to the listings it hands out (cards, a world's page), not a column.
    tag_names: list[str]
    cover = models.CharField(max_length=255, blank=True)  # the document's cover image, a storage name
    thumbnail = models.CharField(max_length=255, blank=True)  # the preview check's frame, a storage name
    listed_at = models.DateTimeField()  # first approval: what "new" sorts by
    play_count = models.PositiveIntegerField(default=0)
    like_count = models.PositiveIntegerField(default=0)
    # log2 of the decayed activity, see gallery.services.trending_add; 0 means no activity yet.
    trending_score = models.FloatField(default=0.0)
    featured_at = models.DateTimeField(null=True, blank=True)
    # Tags and character names, searched along with the title, logline and description.
    search_text = models.TextField(blank=True)
    # PostgreSQL only (stays empty on SQLite); its GIN index is created by migration 0002 on PostgreSQL.
    search_vector = SearchVectorField(null=True)

    class Meta:
        indexes = [
            # Keyset pages: one index per sort, each ending in the id tiebreaker, for listed rows only.
            models.Index(fields=["category", "-listed_at", "-id"], condition=LISTED, name="listing_category_new"),
            models.Index(
                fields=["category", "-trending_score", "-id"], condition=LISTED, name="listing_category_trending"
            ),
            models.Index(fields=["category", "-like_count", "-id"], condition=LISTED, name="listing_category_top"),
            models.Index(fields=["-listed_at", "-id"], condition=LISTED, name="listing_new"),
            models.Index(fields=["-trending_score", "-id"], condition=LISTED, name="listing_trending"),
            models.Index(fields=["-like_count", "-id"], condition=LISTED, name="listing_top"),
            models.Index(
                fields=["-featured_at"], condition=models.Q(featured_at__isnull=False), name="listing_featured"
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Like(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    listing = models.ForeignKey(Listing, on_delete=models.CASCADE, related_name="likes")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "listing"], name="like_once_per_user")]

    def __str__(self) -> str:
        return f"{self.user_id} likes {self.listing_id}"


class Follow(models.Model):
    follower = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="following")
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="followers")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["follower", "creator"], name="follow_once"),
            models.CheckConstraint(condition=~models.Q(follower=models.F("creator")), name="follow_not_oneself"),
        ]

    def __str__(self) -> str:
        return f"{self.follower_id} follows {self.creator_id}"


class Play(models.Model):
    """A player played a world on a day (UTC): play counts count these, so replays the same day add nothing."""

    player = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    listing = models.ForeignKey(Listing, on_delete=models.CASCADE, related_name="plays")
    day = models.DateField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["player", "listing", "day"], name="play_once_per_day")]

    def __str__(self) -> str:
        return f"{self.player_id} played {self.listing_id} on {self.day}"
