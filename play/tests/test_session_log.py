"""The input log: numbered from one counter per session and written with it (one statement on PostgreSQL),
under concurrent inputs too."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts.tests.factories import UserFactory
from play.models import PlaySession, SessionEvent
from play.services import session_input_append, session_inputs_applied
from play.tests.factories import PlaySessionFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_inputs_number_on_from_the_session_s_counter() -> None:
    session = PlaySessionFactory(status="queued")
    player = session.owner
    for client_sequence in (1, 2, 3):
        session_input_append(
            session=session,
            player=player,
            browser="",
            client_sequence=client_sequence,
            payload={"type": "key_down", "key": "KeyW"},
        )
    event, new = session_input_append(
        session=session, player=player, browser="", client_sequence=2, payload={"type": "key_down", "key": "KeyW"}
    )
    assert (event.sequence, new) == (2, False)  # a resend is the logged input, not a new number
    assert list(SessionEvent.objects.filter(session=session).values_list("sequence", flat=True)) == [1, 2, 3]
    assert PlaySession.objects.get(pk=session.pk).last_sequence == 3


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite takes one writer at a time anyway")
def test_a_live_world_s_players_sending_at_once_take_distinct_consecutive_numbers() -> None:
    session = PlaySessionFactory(status="queued", is_live=True)
    players = [session.owner, *UserFactory.create_batch(7)]

    def send(player_index: int) -> list[int]:
        try:
            return [
                session_input_append(
                    session=session,
                    player=players[player_index],
                    browser="",
                    client_sequence=number,
                    payload={"type": "key_down", "key": "KeyW"},
                )[0].sequence
                for number in range(1, 26)
            ]
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=len(players)) as pool:
        numbers = sorted(number for numbers in pool.map(send, range(len(players))) for number in numbers)
    assert numbers == list(range(1, 25 * len(players) + 1))
    assert PlaySession.objects.get(pk=session.pk).last_sequence == 25 * len(players)


def test_a_player_s_two_tabs_both_counting_from_one_log_both_inputs_and_resends_once() -> None:
    session = PlaySessionFactory(status="queued")
    key = {"type": "key_down", "key": "KeyW"}
    first_tab = session_input_append(
        session=session, player=session.owner, browser="tab-one-1", client_sequence=1, payload=key
    )
    second_tab = session_input_append(
        session=session, player=session.owner, browser="tab-two-2", client_sequence=1, payload=key
    )
    resent = session_input_append(
        session=session, player=session.owner, browser="tab-two-2", client_sequence=1, payload=key
    )
    assert [(event.sequence, new) for event, new in (first_tab, second_tab, resent)] == [
        (1, True),
        (2, True),
        (2, False),
    ]


def test_inputs_logged_before_browsers_were_kept_stay_valid_and_deduplicated_per_player() -> None:
    session = PlaySessionFactory(status="queued", last_sequence=1)
    # An input as the log held it before browsers were kept: no browser, told apart per player.
    old = SessionEvent.objects.create(
        session=session, sequence=1, player=session.owner, client_sequence=5, kind="pause", payload={"type": "pause"}
    )
    event, new = session_input_append(
        session=session, player=session.owner, browser="", client_sequence=5, payload={"type": "pause"}
    )
    assert (event.pk, new) == (old.pk, False)


@settings(max_examples=15, deadline=None)
@given(
    reports=st.lists(
        st.tuples(
            st.integers(0, 1),
            st.integers(1, 4),
            st.integers(0, 2**40),
            # Any text but NUL, which PostgreSQL's jsonb cannot hold (and no event or flag name contains).
            st.dictionaries(
                st.sampled_from(["events", "flags"]),
                st.lists(st.text(st.characters(exclude_characters="\x00"), max_size=8), max_size=2),
            ),
        ),
        max_size=6,
    )
)
def test_a_ticks_report_records_each_reported_input_and_no_other(
    reports: list[tuple[int, int, int, dict[str, list[str]]]],
) -> None:
    sessions = [PlaySessionFactory(status="queued"), PlaySessionFactory(status="queued")]
    for session in sessions:
        for client_sequence in range(1, 5):
            payload = {"type": "key_down", "key": "KeyW"}
            session_input_append(
                session=session, player=session.owner, browser="", client_sequence=client_sequence, payload=payload
            )
    applied = [(sessions[index].pk, sequence, tick, effects) for index, sequence, tick, effects in reports]
    session_inputs_applied(applied=applied)
    expected = {(session_id, sequence): (tick, effects) for session_id, sequence, tick, effects in applied}
    for event in SessionEvent.objects.filter(session__in=sessions):
        assert (event.applied_tick, event.applied_effects) == expected.get(
            (event.session_id, event.sequence), (None, {})
        ), (event.session_id, event.sequence)
