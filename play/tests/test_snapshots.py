"""Which snapshot a reopen starts from, and which ones pruning keeps, when ticks tie (a conversation's are all 0)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from play.models import SessionSnapshot
from play.selectors import session_open_message
from play.services import SNAPSHOTS_KEPT, session_snapshot_store
from play.tests.factories import PlaySessionFactory

pytestmark = pytest.mark.django_db


def test_a_conversation_reopens_from_its_newest_snapshot_though_every_tick_is_zero() -> None:
    session = PlaySessionFactory(engine="conversation")
    for sequence in range(1, 6):
        session_snapshot_store(session_id=session.pk, tick=0, sequence=sequence, engine_state=b"", narrative={})
    assert session_open_message(session=session).snapshot.sequence == 5
    kept = SessionSnapshot.objects.filter(session=session).values_list("sequence", flat=True)
    assert sorted(kept) == [3, 4, 5]


@settings(max_examples=25, deadline=None)
@given(ticks=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=8))
def test_the_reopen_takes_the_highest_tick_and_the_latest_stored_among_equals(ticks: list[int]) -> None:
    session = PlaySessionFactory(engine="conversation")
    for sequence, tick in enumerate(ticks, start=1):
        session_snapshot_store(session_id=session.pk, tick=tick, sequence=sequence, engine_state=b"", narrative={})
    stored = sorted(enumerate(ticks, start=1), key=lambda pair: (pair[1], pair[0]), reverse=True)
    assert session_open_message(session=session).snapshot.sequence == stored[0][0]
    kept = SessionSnapshot.objects.filter(session=session).values_list("sequence", flat=True)
    assert sorted(kept) == sorted(sequence for sequence, _ in stored[:SNAPSHOTS_KEPT])
