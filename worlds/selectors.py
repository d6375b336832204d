"""Reads about authored content: what a person may see and edit, and what is broken in a world."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet

from accounts.models import User
from accounts.roles import MODERATE
from accounts.selectors import sees_mature
from worlds.documents import document_public
from worlds.models import ContentRating, ReviewStatus, Story, World, WorldVersion


def worlds_owned(*, owner: User) -> QuerySet[World]:
    return World.objects.filter(owner=owner).order_by("-updated_at")


def world_latest_version(*, world: World) -> WorldVersion | None:
    return world.versions.order_by("-number").first()


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
