"""The order a session applies its inputs in (InputSequencer): each input once, in the platform's sequence."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from inference.play.sequencing import InputSequencer
from inference.protocol import PlayerInput, ReplayedInput


def numbered(sequence: int) -> PlayerInput:
    """An input that says which one it is, so a test sees the right input travel with its number."""
    return {"type": "prompt", "text": f"input {sequence}"}


def delivered(sequencer: InputSequencer, sequence: int, tick: int) -> list[tuple[int, PlayerInput]]:
    """Forward input `sequence` at `tick` as the session host does: of the inputs the sequencer lets through,
    apply those still new, each advancing the applied sequence. Returns what was applied, in order."""
    applied = []
    for number, ready in sequencer.forwarded(sequence, numbered(sequence), tick):
        if sequencer.is_new(number):
            sequencer.applied = number
            applied.append((number, ready))
    return applied


def numbers(applied: list[tuple[int, PlayerInput]]) -> list[int]:
    return [number for number, _ in applied]


def test_inputs_that_come_in_order_apply_at_once() -> None:
    sequencer = InputSequencer()
    assert delivered(sequencer, 1, tick=0) == [(1, numbered(1))]
    assert delivered(sequencer, 2, tick=0) == [(2, numbered(2))]
    assert delivered(sequencer, 3, tick=1) == [(3, numbered(3))]
    assert sequencer.applied == 3
    assert sequencer.early == {}
    assert not any(sequencer.missing_due(tick) for tick in range(100))


def test_an_input_after_a_gap_waits_and_the_missing_one_lets_it_through_in_sequence_order() -> None:
    sequencer = InputSequencer()
    delivered(sequencer, 1, tick=0)
    assert delivered(sequencer, 3, tick=5) == []
    assert delivered(sequencer, 4, tick=5) == []
    assert sequencer.applied == 1
    assert sequencer.early == {3: numbered(3), 4: numbered(4)}
    assert delivered(sequencer, 2, tick=6) == [(2, numbered(2)), (3, numbered(3)), (4, numbered(4))]
    assert sequencer.applied == 4
    assert sequencer.early == {}


def test_a_missing_input_that_comes_before_two_ticks_pass_is_never_asked_for() -> None:
    sequencer = InputSequencer()
    delivered(sequencer, 2, tick=10)
    assert not sequencer.missing_due(11)
    assert numbers(delivered(sequencer, 1, tick=11)) == [1, 2]
    assert not any(sequencer.missing_due(tick) for tick in range(11, 200))


def test_a_gap_still_open_two_ticks_on_asks_for_the_missing_input_once_and_again_only_after_a_second() -> None:
    sequencer = InputSequencer()  # 20 ticks a second
    delivered(sequencer, 2, tick=10)
    delivered(sequencer, 3, tick=11)  # a second early input does not put the first ask off
    assert [sequencer.missing_due(tick) for tick in (10, 11, 12)] == [False, False, True]
    assert not sequencer.missing_due(12)  # asked once, however often the tick is looked at
    assert not any(sequencer.missing_due(tick) for tick in range(13, 32))
    assert sequencer.missing_due(32)
    assert not sequencer.missing_due(33)


def test_a_gap_filled_after_it_was_asked_for_is_asked_for_no_more() -> None:
    sequencer = InputSequencer(missing_wait_ticks=2, missing_ask_again_ticks=3)
    delivered(sequencer, 2, tick=0)
    assert sequencer.missing_due(2)
    assert numbers(delivered(sequencer, 1, tick=3)) == [1, 2]
    assert not any(sequencer.missing_due(tick) for tick in range(3, 100))


def test_a_gap_that_stays_open_behind_a_filled_one_is_still_asked_for() -> None:
    sequencer = InputSequencer()
    delivered(sequencer, 2, tick=0)
    delivered(sequencer, 4, tick=0)
    assert numbers(delivered(sequencer, 1, tick=1)) == [1, 2]  # 3 is still missing; 4 waits for it
    assert sequencer.early == {4: numbered(4)}
    assert sequencer.missing_due(2)


def test_a_duplicate_or_an_already_applied_input_is_ignored() -> None:
    sequencer = InputSequencer()
    delivered(sequencer, 1, tick=0)
    delivered(sequencer, 2, tick=0)
    assert not sequencer.is_new(1) and not sequencer.is_new(2) and sequencer.is_new(3)
    assert delivered(sequencer, 2, tick=1) == []
    assert delivered(sequencer, 1, tick=1) == []
    # A waiting input forwarded twice waits once and applies once.
    assert delivered(sequencer, 4, tick=1) == []
    assert delivered(sequencer, 4, tick=1) == []
    assert sequencer.early == {4: numbered(4)}
    # An old duplicate coming meanwhile neither lets the waiting input through nor calls the ask off.
    assert delivered(sequencer, 2, tick=2) == []
    assert sequencer.missing_due(3)
    assert numbers(delivered(sequencer, 3, tick=4)) == [3, 4]
    assert delivered(sequencer, 4, tick=5) == []
    assert sequencer.applied == 4


def test_a_sequencer_restored_from_a_snapshot_ignores_the_inputs_the_snapshot_holds() -> None:
    sequencer = InputSequencer(5)
    assert delivered(sequencer, 5, tick=0) == []
    assert delivered(sequencer, 3, tick=0) == []
    assert numbers(delivered(sequencer, 6, tick=0)) == [6]


def replayed(sequence: int, tick: int) -> ReplayedInput:
    return ReplayedInput(sequence=sequence, tick=tick, input=numbered(sequence))


def test_a_reopen_replays_the_logged_inputs_after_the_last_applied_one_by_tick_in_sequence_order() -> None:
    sequencer = InputSequencer(2)
    logged = [replayed(4, 7), replayed(1, 3), replayed(6, 9), replayed(3, 7), replayed(2, 5), replayed(5, 7)]
    by_tick = sequencer.replay_by_tick(logged)
    assert {tick: [entry.sequence for entry in entries] for tick, entries in by_tick.items()} == {
        7: [3, 4, 5],
        9: [6],
    }
    assert by_tick[9] == [replayed(6, 9)]


def test_after_a_reopen_the_inputs_that_came_early_drain_in_order_and_nothing_more_is_asked() -> None:
    sequencer = InputSequencer()
    delivered(sequencer, 1, tick=0)
    delivered(sequencer, 5, tick=1)
    delivered(sequencer, 3, tick=2)
    assert sequencer.early_drained() == [(3, numbered(3)), (5, numbered(5))]
    assert sequencer.early == {}
    assert sequencer.early_drained() == []
    assert not any(sequencer.missing_due(tick) for tick in range(100))


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    """n, and inputs 1..n forwarded in any order, some more than once, each at a tick no earlier than the last."""
    n = draw(st.integers(min_value=1, max_value=30))
    repeated = draw(st.lists(st.integers(min_value=1, max_value=n), max_size=n))
    order = draw(st.permutations([*range(1, n + 1), *repeated]))
    waits = draw(st.lists(st.integers(min_value=0, max_value=3), min_size=len(order), max_size=len(order)))
    return n, list(zip(order, itertools.accumulate(waits), strict=True))


@given(deliveries())
def test_inputs_forwarded_in_any_order_and_any_number_of_times_apply_in_sequence_order_each_once(
    forwarded: tuple[int, list[tuple[int, int]]],
) -> None:
    n, order = forwarded
    sequencer = InputSequencer()
    applied: list[tuple[int, PlayerInput]] = []
    for sequence, tick in order:
        sequencer.missing_due(tick)  # the host looks every tick; asking changes no order
        applied += delivered(sequencer, sequence, tick)
    assert applied == [(number, numbered(number)) for number in range(1, n + 1)]
    assert sequencer.early == {}
    assert not sequencer.missing_due(order[-1][1] + 1000)
