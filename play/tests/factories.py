from __future__ import annotations

import factory
from django.utils import timezone

from accounts.tests.factories import UserFactory
from play.models import PlaySession
from worlds.documents import world_document
from worlds.models import WorldVersion
from worlds.tests.factories import WorldFactory


class WorldVersionFactory(factory.django.DjangoModelFactory):
    """An approved version of a fresh world."""

    class Meta:
        model = WorldVersion

    world = factory.SubFactory(WorldFactory)
    number = 1
    document = factory.LazyAttribute(lambda version: world_document(version.world))
    published_by = factory.LazyAttribute(lambda version: version.world.owner)
    status = "approved"


class PlaySessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PlaySession

    version = factory.SubFactory(WorldVersionFactory)
    owner = factory.SubFactory(UserFactory)
    engine = "raycaster"
    queued_at = factory.LazyFunction(timezone.now)
