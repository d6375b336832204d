from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from accounts.models import User
from memories.models import Acquaintance, Memory, MemoryKind
from memories.tasks import memories_consolidate
from worlds.models import Character

pytestmark = pytest.mark.django_db


def test_the_twentieth_turn_queues_one_summary_of_the_period(
    character: Character, player: User, tell: Callable[..., int], django_capture_on_commit_callbacks: Any
) -> None:
    for turn in range(1, 20):
        tell(character, player, f"I counted {turn} gulls on the pier.", importance=0.4)
    assert not Memory.objects.filter(kind=MemoryKind.SUMMARY).exists()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        tell(character, player, "My sister Ada hid the ledger in the lighthouse.", importance=0.9)
    assert len(callbacks) == 1
    summary = Memory.objects.get(kind=MemoryKind.SUMMARY)
    assert summary.turn == 20
    assert "My sister Ada hid the ledger in the lighthouse." in summary.text
    assert summary.importance == pytest.approx(0.9)
    assert Acquaintance.objects.get().last_consolidated_turn == 20


def test_the_consolidation_task_run_twice_makes_one_summary(
    character: Character, player: User, tell: Callable[..., int]
) -> None:
    for turn in range(1, 21):
        tell(character, player, f"I counted {turn} gulls on the pier.")
    acquaintance = Acquaintance.objects.get()
    assert memories_consolidate(acquaintance.pk) is True
    assert memories_consolidate(acquaintance.pk) is False
    assert Memory.objects.filter(kind=MemoryKind.SUMMARY).count() == 1
    acquaintance.refresh_from_db()
    assert acquaintance.last_consolidated_turn == 20


def test_consolidation_before_its_period_ends_does_nothing(
    character: Character, player: User, tell: Callable[..., int]
) -> None:
    tell(character, player, "I counted gulls on the pier.")
    assert memories_consolidate(Acquaintance.objects.get().pk) is False
    assert not Memory.objects.filter(kind=MemoryKind.SUMMARY).exists()
    assert Acquaintance.objects.get().last_consolidated_turn == 0


def test_consolidation_of_a_deleted_acquaintance_is_a_no_op() -> None:
    assert memories_consolidate(123_456) is False
