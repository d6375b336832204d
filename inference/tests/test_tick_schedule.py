"""The worker's tick schedule: the frame rate when nothing happens, early ticks after inputs, and their floor."""

from __future__ import annotations

from inference.worker import TickSchedule

INTERVAL = 0.05  # 20 frames a second


def ticks_in_one_second(schedule: TickSchedule, input_waiting: bool) -> int:
    """How many ticks start in one second of a clock that jumps straight to each tick (steps take no time)."""
    now, ticks = 0.0, 0
    while (now := now + schedule.wait(now, input_waiting)) < 1.0:
        schedule.started(now)
        ticks += 1
    return ticks


def test_with_no_input_ticks_come_an_interval_apart() -> None:
    assert ticks_in_one_second(TickSchedule(INTERVAL), input_waiting=False) == 20


def test_an_input_long_after_the_last_tick_is_stepped_at_once() -> None:
    schedule = TickSchedule(INTERVAL)
    schedule.started(10.0)
    assert schedule.wait(10.04, input_waiting=True) == 0
    assert schedule.wait(10.04, input_waiting=False) > 0


def test_an_input_just_after_a_tick_waits_for_half_an_interval() -> None:
    schedule = TickSchedule(INTERVAL)
    schedule.started(10.0)
    assert abs(schedule.wait(10.01, input_waiting=True) - 0.015) < 1e-9


def test_a_flood_of_inputs_steps_the_world_at_most_twice_the_frame_rate() -> None:
    assert ticks_in_one_second(TickSchedule(INTERVAL), input_waiting=True) == 40
