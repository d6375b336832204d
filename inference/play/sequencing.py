"""The order a session applies its inputs in: the platform's sequence, each input exactly once.

Inputs are forwarded on several platform threads, so one may overtake another on the way, and a channel layer
drops the oldest messages of a consumer that falls behind. An input that comes after a gap waits here for the
overtaken one; when the gap is still open a couple of ticks later, the host asks the platform to reopen the
session (`session.missing`), and the reopen's pending inputs, from the log, fill it.
"""

from __future__ import annotations

from collections import defaultdict

from inference.protocol import PlayerInput, ReplayedInput


class InputSequencer:
    """The last applied sequence of one session, the inputs that came early, and when to ask for a missing one."""

    def __init__(self, applied: int = 0, *, missing_wait_ticks: int = 2, missing_ask_again_ticks: int = 20) -> None:
        self.applied = applied
        self.missing_wait_ticks = missing_wait_ticks
        self.missing_ask_again_ticks = missing_ask_again_ticks
        self.early: dict[int, PlayerInput] = {}
        self.missing_ask_at: int | None = None  # the tick to ask for the missing input at, while early inputs wait

    def is_new(self, sequence: int) -> bool:
        """Whether the input numbered `sequence` is still to be applied (one applied before a failover is not)."""
        return sequence > self.applied

    def forwarded(self, sequence: int, given: PlayerInput, tick: int) -> list[tuple[int, PlayerInput]]:
        """The inputs to apply now, in order, as the platform forwards `given`: none when it came after a gap (it
        waits, and the missing one is asked for at a later tick), else it and the early ones it lets through."""
        if sequence > self.applied + 1:
            self.early[sequence] = given
            if self.missing_ask_at is None:
                self.missing_ask_at = tick + self.missing_wait_ticks
            return []
        ready = [(sequence, given)]
        following = max(self.applied, sequence) + 1
        while following in self.early:
            ready.append((following, self.early.pop(following)))
            following += 1
        if not self.early:
            self.missing_ask_at = None
        return ready

    def early_drained(self) -> list[tuple[int, PlayerInput]]:
        """After a reopen applied the log's pending inputs: the ones that came early, in order. The log is whole,
        so a number still missing was never logged (an input refused after it was numbered)."""
        early, self.early = self.early, {}
        self.missing_ask_at = None
        return sorted(early.items())

    def missing_due(self, tick: int) -> bool:
        """Whether to ask for the missing input at this tick; once asked, it is asked again a while later unless a
        reopen filled the gap meanwhile (its reply may have been dropped too)."""
        if self.missing_ask_at is None or tick < self.missing_ask_at:
            return False
        self.missing_ask_at = tick + self.missing_ask_again_ticks
        return True

    def replay_by_tick(self, logged: list[ReplayedInput]) -> dict[int, list[ReplayedInput]]:
        """The logged inputs after the last applied one, by the tick they were applied at, in sequence order."""
        by_tick: dict[int, list[ReplayedInput]] = defaultdict(list)
        for entry in sorted(logged, key=lambda entry: entry.sequence):
            if self.is_new(entry.sequence):
                by_tick[entry.tick].append(entry)
        return dict(by_tick)
