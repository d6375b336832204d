"""Fixtures for moderation and gallery tests: checks run inline, publishing with its on-commit tasks, listings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache

from accounts.models import User
from accounts.tests.factories import ModeratorFactory
from config.celery import app
from gallery.models import Listing
from gallery.throttles import AnonymousSearchThrottle
from moderation.services import version_approve
from worlds.models import World, WorldVersion
from worlds.services import world_publish, world_tags_set
from worlds.tests.factories import WorldFactory


@pytest.fixture(autouse=True)
def tasks_run_inline() -> Iterator[None]:
    """With REDIS_URL set (CI) tasks would wait for a worker; these tests run the checks in-process."""
    saved = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = saved


@pytest.fixture(autouse=True)
def search_throttle_forgotten() -> Iterator[None]:
    """Anonymous searches are throttled per address in the cache, which outlives a test: these tests search as
    127.0.0.1 many times a minute."""
    key = f"throttle_{AnonymousSearchThrottle.scope}_127.0.0.1"
    cache.delete(key)
    yield
    cache.delete(key)


@pytest.fixture
def publish(django_capture_on_commit_callbacks: Any) -> Callable[..., WorldVersion]:
    """world_publish, with the on-commit callbacks (the check tasks) run as a real commit would run them."""

    def publish(world: World, by: User | None = None) -> WorldVersion:
        with django_capture_on_commit_callbacks(execute=True):
            return world_publish(world=world, by=by or world.owner)

    return publish


@pytest.fixture
def moderator() -> User:
    return ModeratorFactory()


@pytest.fixture
def listed(publish: Callable[..., WorldVersion], moderator: User) -> Callable[..., Listing]:
    """A world published, checked and approved into the gallery."""

    def listed(tags: tuple[str, ...] = (), **world_values: Any) -> Listing:
        world = WorldFactory(**world_values)
        world_tags_set(world=world, tags=list(tags))
        version_approve(version=publish(world), moderator=moderator)
        return Listing.objects.get(world=world)

    return listed
