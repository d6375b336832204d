"""The demo worlds `make run` loads: one per gallery category, as hand-written world documents."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import transaction

from accounts.models import User
from worlds.models import World
from worlds.services import slug_unique, world_from_document, world_publish

DEMO_CONTENT = Path(__file__).resolve().parent / "demo_content"


@transaction.atomic
def demo_worlds_ensure(*, creator: User) -> list[World]:
    """Create and publish each demo world the creator does not have yet (matched by title); return them all."""
    worlds = []
    for path in sorted(DEMO_CONTENT.glob("*.json")):
        document = json.loads(path.read_text())
        title = document["world"]["title"]
        world = World.objects.filter(owner=creator, title=title).first()
        if world is None:
            world = world_from_document(document, owner=creator, slug=slug_unique(title))
            world_publish(world=world, by=creator)
        worlds.append(world)
    return worlds
