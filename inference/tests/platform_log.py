"""What the platform logs of a session from what its host reports, and sends back when it reopens the session."""

from __future__ import annotations

import msgspec

from inference.protocol import (
    PlayerInput,
    ReplayedInput,
    SessionApplied,
    SessionPropose,
    SessionSnapshot,
    Snapshot,
    WorkerToPlatform,
)


def replayed_input(given: PlayerInput, replies: list[WorkerToPlatform]) -> ReplayedInput:
    """The input as the platform logs it from the host's `session.applied`, for a reopen to replay."""
    (applied,) = [reply for reply in replies if isinstance(reply, SessionApplied)]
    return ReplayedInput(
        sequence=applied.sequence,
        tick=applied.tick,
        input=given,
        events=applied.events,
        story=applied.story,
        hooks=applied.hooks,
    )


def snapshot_kept(taken: SessionSnapshot) -> Snapshot:
    """A `session.snapshot` as the platform keeps it and sends it back in a reopen's `session.open`."""
    return Snapshot(
        tick=taken.tick, sequence=taken.sequence, engine_state=taken.engine_state, narrative=taken.narrative
    )


def proposal_logged(proposal: SessionPropose) -> PlayerInput:
    """What narrative work proposed, as the platform logs it and sends it back as the session's next input."""
    return msgspec.to_builtins(proposal.input)
