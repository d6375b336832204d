"""The input log's numbering: one counter per session, raised in one UPDATE, under concurrent inputs too."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor

from accounts.tests.factories import UserFactory
from stories.models import PlaySession, SessionEvent
from stories.services import event_log_and_forward, session_input_append
from stories.tests.factories import PlaySessionFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_inputs_number_on_from_the_session_s_counter() -> None:
    session = PlaySessionFactory(status="queued")
    player = session.owner
    for client_sequence in (1, 2, 3):
        session_input_append(session=session, player=player, browser="", client_sequence=client_sequence,
                             payload={"type": "key_down", "key": "KeyW"})  # fmt: skip
    event, new = session_input_append(session=session, player=player, browser="", client_sequence=2,
                                      payload={"type": "key_down", "key": "KeyW"})  # fmt: skip
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
                session_input_append(session=session, player=players[player_index], browser="", client_sequence=number,
                                     payload={"type": "key_down", "key": "KeyW"})[0].sequence
                for number in range(1, 26)
            ]  # fmt: skip
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=len(players)) as pool:
        numbers = sorted(number for numbers in pool.map(send, range(len(players))) for number in numbers)
    assert numbers == list(range(1, 25 * len(players) + 1))
    assert PlaySession.objects.get(pk=session.pk).last_sequence == 25 * len(players)


def test_a_player_s_two_tabs_both_counting_from_one_log_both_inputs_and_resends_once() -> None:
    session = PlaySessionFactory(status="queued")
    key = {"type": "key_down", "key": "KeyW"}
    first_tab = session_input_append(session=session, player=session.owner, browser="tab-one-1", client_sequence=1,
                                     payload=key)  # fmt: skip
    second_tab = session_input_append(session=session, player=session.owner, browser="tab-two-2", client_sequence=1,
                                      payload=key)  # fmt: skip
    resent = session_input_append(session=session, player=session.owner, browser="tab-two-2", client_sequence=1,
                                  payload=key)  # fmt: skip
    assert [(event.sequence, new) for event, new in (first_tab, second_tab, resent)] == [
        (1, True),
        (2, True),
        (2, False),
    ]


def test_inputs_logged_before_browsers_were_kept_stay_valid_and_deduplicated_per_player() -> None:
    session = PlaySessionFactory(status="queued")
    executor = MigrationExecutor(connection)
    executor.migrate([("stories", "0006_session_sequence_counter")])
    with connection.cursor() as cursor:  # an input as 0006 logged it: no browser column yet
        cursor.execute(
            "INSERT INTO stories_sessionevent (session_id, sequence, player_id, client_sequence, kind, payload,"
            " applied_effects, created_at) VALUES (%s, 1, %s, 5, 'pause', '{\"type\": \"pause\"}', '{}', %s)",
            [session.pk.hex, session.owner.pk, "2026-01-01 00:00:00"],
        )
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes("stories"))
    PlaySession.objects.filter(pk=session.pk).update(last_sequence=1)
    old = SessionEvent.objects.get(session=session)
    assert old.browser == ""
    event, new = session_input_append(session=session, player=session.owner, browser="", client_sequence=5,
                                      payload={"type": "pause"})  # fmt: skip
    assert (event.pk, new) == (old.pk, False)


def test_the_migration_continues_each_session_s_numbering_after_its_newest_input() -> None:
    played, fresh = PlaySessionFactory(), PlaySessionFactory()
    for _ in range(4):
        with transaction.atomic():
            event_log_and_forward(session_id=played.pk, payload={"type": "key_down", "key": "KeyW"})
    executor = MigrationExecutor(connection)
    executor.migrate([("stories", "0005_parked_sessions")])  # drops the counter; the log stays
    executor.loader.build_graph()
    executor.migrate([("stories", "0006_session_sequence_counter")])
    assert PlaySession.objects.get(pk=played.pk).last_sequence == 4
    assert PlaySession.objects.get(pk=fresh.pk).last_sequence == 0
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes("stories"))
    with transaction.atomic():
        assert event_log_and_forward(session_id=played.pk, payload={"type": "key_up", "key": "KeyW"}).sequence == 5
