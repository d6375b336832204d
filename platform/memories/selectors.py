"""Reads for the memory pages: which characters remember a player, and what each remembers."""

from __future__ import annotations

from django.db.models import Case, Count, IntegerField, QuerySet, Value, When
from django.http import Http404

from accounts.models import User
from memories.models import Acquaintance, Memory, MemoryKind


def acquaintances_remembering(*, player: User) -> QuerySet[Acquaintance]:
    """The characters that hold memories of this player alone and let players see them, by name.

    A world-scoped character's shared memories hold what every player told it, so they are not shown to one.
    """
    return (
        Acquaintance.objects.filter(player=player, character__players_can_view_memories=True)
        .annotate(memory_count=Count("memories"))
        .filter(memory_count__gt=0)
        .select_related("character")
        .order_by("character__name", "character_id")
    )


def acquaintance_for_page(*, player: User, character_id: int) -> Acquaintance:
    """One character's memories of the player, as its page shows them; 404 when they may not be seen."""
    acquaintance = (
        Acquaintance.objects.filter(player=player, character_id=character_id, character__players_can_view_memories=True)
        .select_related("character")
        .first()
    )
    if acquaintance is None:
        raise Http404("No character remembers you by that name.")
    return acquaintance


def memories_listed(*, acquaintance: Acquaintance) -> QuerySet[Memory]:
    """Pinned facts first, then the newest memories."""
    pinned_first = Case(When(kind=MemoryKind.PINNED, then=Value(0)), default=Value(1), output_field=IntegerField())
    return (
        acquaintance.memories.annotate(pinned_first=pinned_first)
        .order_by("pinned_first", "-turn", "-id")
        .defer("embedding")
    )


def memory_for_change(*, player: User, character_id: int, memory_id: int) -> Memory:
    """A memory a character holds of this player; 404 for anyone else's (their existence is not confirmed)."""
    memory = (
        Memory.objects.filter(pk=memory_id, acquaintance__player=player, acquaintance__character_id=character_id)
        .select_related("acquaintance__character")
        .first()
    )
    if memory is None:
        raise Http404("No such memory of yours.")
    return memory
