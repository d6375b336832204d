"""Reads about authored content: what a person may see and edit, and what is broken in a world."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT

from accounts.models import User
from accounts.roles import MODERATE
from accounts.selectors import sees_mature
from worlds.documents import document_public
from worlds.models import Character, ContentRating, ReviewStatus, Story, World, WorldVersion


def worlds_owned(*, owner: User) -> QuerySet[World]:
    return World.objects.filter(owner=owner).order_by("-updated_at")


def characters_owned(*, owner: User) -> QuerySet[Character]:
    """A creator's characters by name, each with the worlds that cast it, so two of one name can be told apart."""
    worlds = models.Prefetch("worlds", queryset=World.objects.order_by("title").only("pk", "title"))
    return Character.objects.filter(owner=owner).prefetch_related(worlds).order_by("name", "created_at")


def world_latest_version(*, world: World) -> WorldVersion | None:
    return world.versions.order_by("-number").first()


class WorldState(models.TextChoices):
    """Where a world stands as its creator sees it, from the review status of its versions."""

    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    LIVE = "live", "Live"
    REJECTED = "rejected", "Rejected"
    TAKEN_DOWN = "taken_down", "Taken down"


@dataclass(frozen=True)
class WorldReviewStatus:
    """A world's state, the version it is about (with the moderator's words in `version.reason`), and a newer
    version still waiting or refused while an older one is live or taken down."""

    state: WorldState
    version: WorldVersion | None = None
    newer: WorldVersion | None = None


def world_review_status(*, world: World) -> WorldReviewStatus:
    return worlds_review_status(worlds=[world])[world.pk]


def worlds_review_status(*, worlds: Iterable[World]) -> dict[int, WorldReviewStatus]:
    """Each world's review status by its id, from one query over their versions (documents left unread).

    The rejection and takedown reasons are the version's own `reason`, which moderation writes when it decides:
    authoring reads them there, never from moderation's log, which sits above it.
    """
    ids = [world.pk for world in worlds]
    versions: dict[int, list[WorldVersion]] = {world_id: [] for world_id in ids}
    for version in WorldVersion.objects.filter(world_id__in=ids).defer("document").order_by("-number"):
        versions[version.world_id].append(version)
    return {world_id: review_status_of(newest_first) for world_id, newest_first in versions.items()}


def review_status_of(versions: list[WorldVersion]) -> WorldReviewStatus:
    """The status a world's versions (newest first) give it: a live version outranks a newer submission."""
    if not versions:
        return WorldReviewStatus(WorldState.DRAFT)
    newest = versions[0]
    for status, state in ((ReviewStatus.APPROVED, WorldState.LIVE), (ReviewStatus.TAKEN_DOWN, WorldState.TAKEN_DOWN)):
        shown = next((version for version in versions if version.status == status), None)
        if shown is not None:
            return WorldReviewStatus(state, shown, newest if newest.number > shown.number else None)
    state = WorldState.REJECTED if newest.status == ReviewStatus.REJECTED else WorldState.IN_REVIEW
    return WorldReviewStatus(state, newest)


def world_titles_casting(*, character_ids: Iterable[int]) -> dict[int, list[str]]:
    """The titles of the live worlds each character is cast in, as players know them (the live version's
    title, never a draft's), by character id; a character in no live world has an empty list."""
    live_title = Subquery(
        WorldVersion.objects.filter(world=OuterRef("world"), status=ReviewStatus.APPROVED)
        .order_by("-number")
        .annotate(title=KT("document__world__title"))
        .values("title")[:1]
    )
    character_ids = list(character_ids)
    casting = World.characters.through.objects.filter(character_id__in=list(character_ids))
    titles: dict[int, list[str]] = {character_id: [] for character_id in character_ids}
    rows = casting.annotate(title=live_title).filter(title__isnull=False).order_by("title")
    for character_id, title in rows.values_list("character_id", "title"):
        titles[character_id].append(title)
    return titles


def version_document_for(*, version: WorldVersion, user: User | AnonymousUser) -> dict[str, Any]:
    """The version's document as `user` may read it: whole for its creator and moderators, else without what
    the world keeps from players (worlds.documents.document_public)."""
    if user.is_authenticated and (user.pk == version.world.owner_id or user.has_perm(MODERATE)):
        return version.document
    return document_public(version.document)


def world_problems(*, world: World) -> list[str]:
    """Broken references that would make the world misbehave in play, each as a sentence for the creator."""
    problems: list[str] = []
    stories = list(world.stories.prefetch_related("beats"))
    beat_names = {beat.name for story in stories for beat in story.beats.all()}
    clue_names = {clue.name for character in world.characters.all() for clue in character.clues.all()}
    for story in stories:
        problems += story_problems(story=story)
    for hook in world.hooks.prefetch_related("branches"):
        if hook.trigger == "beat" and hook.trigger_value.get("beat") not in beat_names:
            problems.append(
                f"hook {hook.name}: it triggers on beat {hook.trigger_value.get('beat')!r}, which no story has"
            )
        for branch in hook.branches.all():
            beat = branch.effects.get("move_to_beat")
            if beat and beat not in beat_names:
                problems.append(f"hook {hook.name}, branch {branch.name}: moves to beat {beat!r}, which no story has")
            for clue in branch.effects.get("reveal_clues", []):
                if clue not in clue_names:
                    problems.append(
                        f"hook {hook.name}, branch {branch.name}: reveals clue {clue!r}, which no character holds"
                    )
    for character in world.characters.all():
        for clue in character.clues.filter(condition="beat"):
            if clue.condition_value not in beat_names:
                problems.append(
                    f"character {character.name}, clue {clue.name}: waits for beat {clue.condition_value!r}, "
                    "which no story has"
                )
    return problems


def story_problems(*, story: Story) -> list[str]:
    """A story's beat graph: its start exists, every choice leads to a beat, and an ending is reachable."""
    beats = {beat.name: beat for beat in story.beats.all()}
    problems = []
    if story.start_beat not in beats:
        problems.append(f"story {story.title}: the start beat {story.start_beat!r} does not exist")
    for beat in beats.values():
        for choice in beat.choices:
            if choice["to"] not in beats:
                problems.append(
                    f"story {story.title}, beat {beat.name}: choice {choice['text']!r} leads to "
                    f"{choice['to']!r}, which does not exist"
                )
    if story.start_beat in beats and not problems:
        reached, frontier = set(), [story.start_beat]
        while frontier:
            name = frontier.pop()
            if name not in reached:
                reached.add(name)
                frontier += [choice["to"] for choice in beats[name].choices]
        if not any(beats[name].is_ending for name in reached):
            problems.append(f"story {story.title}: no ending can be reached from {story.start_beat!r}")
    return problems


def versions_visible(*, user: User | AnonymousUser) -> QuerySet[WorldVersion]:
    """Versions a person may read through the API: approved ones (mature only for those who opted in), every
    version of their own worlds, and for moderators everything."""
    if user.is_authenticated and user.has_perm(MODERATE):
        return WorldVersion.objects.all()
    public = Q(status=ReviewStatus.APPROVED)
    if not sees_mature(user=user):
        public &= ~Q(document__world__content_rating=ContentRating.MATURE)
    if user.is_authenticated:
        public |= Q(world__owner=user)
    return WorldVersion.objects.filter(public)
