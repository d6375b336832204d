"""The demo worlds `make run` loads: one per gallery category, as hand-written world documents."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import transaction

import worlds
from accounts.demo import DEMO_PEOPLE
from accounts.models import User
from moderation.services import version_approve
from worlds.models import ReviewStatus, World
from worlds.published import PublishedWorld
from worlds.services import slug_unique, world_from_document, world_publish

DEMO_CONTENT = Path(worlds.__file__).resolve().parent / "demo_content"
DEMO_MODERATOR = next(person.username for person in DEMO_PEOPLE if person.moderator)


@transaction.atomic
def demo_worlds_ensure(*, creator: User) -> list[World]:
    """Create, publish and approve each demo world the creator does not have yet (matched by title).

    The demo moderator approves them through the moderation service, as a moderator would, so the gallery
    shows them at once; a demo world already loaded but still waiting for review is approved too.
    """
    moderator = User.objects.get(username=DEMO_MODERATOR)
    worlds = []
    for path in sorted(DEMO_CONTENT.glob("*.json")):
        document = json.loads(path.read_text())
        title = PublishedWorld.of(document).world.title
        world = World.objects.filter(owner=creator, title=title).first()
        if world is None:
            world = world_from_document(document, owner=creator, slug=slug_unique(title))
            world_publish(world=world, by=creator)
        if not world.versions.filter(status=ReviewStatus.APPROVED).exists():
            pending = world.versions.filter(status=ReviewStatus.PENDING).order_by("-number").first()
            if pending is not None:
                version_approve(version=pending, moderator=moderator, reason="Demo content shipped with Worldloom.")
        worlds.append(world)
    return worlds
