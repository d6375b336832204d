"""The sessions one worker runs: each input applied at a known tick, all sessions stepped as one batch.

Persistence is exact because every input is applied at a known tick, and the host reports that tick (and
the world events the input became) back to the platform, which logs it. A session reopened on another
worker restores its last snapshot and replays the logged inputs at their ticks up to the last frame anyone
saw, then takes pending inputs as new: the same state as if it had never moved, and no input twice.

Narrative work that takes a language model seconds (a character's reply, a beat's choices, a hook's outcome)
never runs here: the host hands it out as `Job`s, which the worker runs on a thread of its own while the
world keeps stepping. What such work decides about the session's state comes back as a proposed input
(`offer`, `hook_outcome`) that the platform logs like any other, so a replay after a failover applies the
same choices and the same branch at the same tick without asking the model again.

The host opens, steps and snapshots; the order of inputs is `InputSequencer`'s, and what an input or a tick
does to the story `PlayStateMachine`'s.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from inference.engine import Frame, StepRequest, WorldEngine
from inference.language.embedding import Embedder
from inference.narrative.setting import Setting
from inference.narrative.world_prompts import WorldPromptClassifier
from inference.play.sequencing import InputSequencer
from inference.play.state_machine import Job, PlayStateMachine, Reaction
from inference.play.story import StoryGraph
from inference.protocol import (
    NarrativeState,
    PlayerInput,
    ReplayedInput,
    SessionError,
    SessionMissing,
    SessionOpen,
    SessionOpened,
    SessionSnapshot,
    WorkerReply,
    WorldEvent,
)
from inference.world.state import action_from_keys

logger = logging.getLogger(__name__)

__all__ = ["CONVERSATION", "HostConfig", "Job", "SessionHost"]

# Sessions of worlds without a picture (a character published on its own) run on no world engine.
CONVERSATION = "conversation"


@dataclass(frozen=True)
class HostConfig:
    """Pacing of the sessions a worker hosts."""

    # Snapshots every few seconds bound what a failover must replay (about 3 s of inputs and ticks).
    snapshot_every_seconds: float = 3.0
    # A Live world's vote on the choices stays open ten seconds at 20 ticks a second: time to read and pick.
    vote_window_ticks: int = 200
    # A gap in the forwarded inputs is most often an input overtaken on the way (the platform logs inputs on
    # several threads), which comes a moment later: the worker asks for it only when two ticks have passed.
    # Asking at once would reopen a busy Live world's session many times a second, each reopen a log query and
    # messages to every browser. One that brought no reopen (its reply was dropped too) is asked again.
    missing_wait_ticks: int = 2
    missing_ask_again_ticks: int = 20
    # A reopen replays from a snapshot taken every few seconds, so a few dozen ticks: five minutes of ticks is a
    # log that cannot be right (a tick the engine never reached), and ten seconds of replay on one thread would
    # hold up every other session of the worker. A replay past either fails its own session only.
    replay_max_ticks: int = 6000
    replay_max_seconds: float = 10.0


class ReplayOverrun(Exception):
    """A reopen's replay would run past its budget of ticks or seconds; its session cannot open from this log."""


@dataclass
class HostedSession:
    """A session the host steps; the engine knows it by the platform's own id."""

    id: str
    engine: WorldEngine | None  # None: a conversation, no picture
    tick: int
    sequencer: InputSequencer
    play: PlayStateMachine
    pending_events: list[WorldEvent] = field(default_factory=list)
    # Messages produced while stepping (a vote closing, a hook walked into), sent with the tick's frames.
    outbox: list[WorkerReply] = field(default_factory=list)
    snapshot_due: bool = True
    last_snapshot_at: float = 0.0


class SessionHost:
    """Every session of one worker, stepped together; fed messages, it returns messages to send."""

    def __init__(
        self, engines: dict[str, WorldEngine], config: HostConfig = HostConfig(), embedder: Embedder | None = None
    ) -> None:
        self.engines = engines
        self.config = config
        self.sessions: dict[str, HostedSession] = {}
        self.embedder = embedder
        # Without an embedder, typed prompts fall back to the keyword list.
        self.world_prompts = WorldPromptClassifier(embedder) if embedder is not None else None
        self.jobs: list[Job] = []

    def take_jobs(self) -> list[Job]:
        jobs, self.jobs = self.jobs, []
        return jobs

    def open(self, message: SessionOpen) -> list[WorkerReply]:
        """Open (or reopen after a failover) a session as the platform describes it."""
        session_id = message.session
        engine = None if message.engine == CONVERSATION else self.engines[message.engine]
        snapshot = message.snapshot
        if engine is not None:
            engine.open_session(message.spec, snapshot.engine_state if snapshot else None, session=session_id)
        play = PlayStateMachine(
            session_id,
            narrative=snapshot.narrative if snapshot else NarrativeState(),
            setting=self.setting_for(message.narrative) if message.narrative else None,
            story=StoryGraph(message.story) if message.story else None,
            live=message.live,
            vote_window_ticks=self.config.vote_window_ticks,
            embedder=self.embedder,
            world_prompts=self.world_prompts,
        )
        hosted = HostedSession(
            id=session_id,
            engine=engine,
            tick=snapshot.tick if snapshot else 0,
            sequencer=InputSequencer(
                snapshot.sequence if snapshot else 0,
                missing_wait_ticks=self.config.missing_wait_ticks,
                missing_ask_again_ticks=self.config.missing_ask_again_ticks,
            ),
            play=play,
        )
        beginning = play.begin(hosted.tick)  # the start beat's hooks fire before any input
        self.sessions[session_id] = hosted
        try:
            self.replay(hosted, message.replay, message.target_tick)
        except ReplayOverrun as overrun:
            logger.warning("session %s could not reopen: %s", session_id, overrun)
            self.close(session_id)
            error = f"this session could not be restored ({overrun}); open it again to retry"
            return [SessionError(session=session_id, error=error)]
        # What the replay produced was seen before, and its narrative work was done before.
        hosted.outbox.clear()
        self.jobs = [job for job in self.jobs if job.session != session_id]
        outgoing: list[WorkerReply] = [SessionOpened(session=session_id, tick=hosted.tick)]
        fresh = snapshot is None and not message.replay
        # A player coming back sees where the story stands; one arriving sees it begin.
        outgoing += self.reacted(hosted, play.opened(hosted.tick, arriving=beginning if fresh else None))
        for pending in message.pending:
            outgoing += self.input(session_id, pending.sequence, pending.input)
        return outgoing

    def replay(self, hosted: HostedSession, logged: list[ReplayedInput], target_tick: int | None) -> None:
        """Step from the snapshot's tick to `target_tick`, applying each logged input at its tick.

        Every step moves the tick by one (a session without an engine too), so the replay takes exactly
        `last - tick` steps; more than HostConfig.replay_max_ticks, or longer than replay_max_seconds, is a
        ReplayOverrun.
        """
        by_tick = hosted.sequencer.replay_by_tick(logged)
        last = max([target_tick or hosted.tick, *by_tick])
        if last - hosted.tick > self.config.replay_max_ticks:
            raise ReplayOverrun(
                f"the log reaches tick {last}, {last - hosted.tick} ticks past the snapshot; a replay takes at most "
                f"{self.config.replay_max_ticks} ticks"
            )
        deadline = time.monotonic() + self.config.replay_max_seconds
        while hosted.tick < last:
            if time.monotonic() >= deadline:
                raise ReplayOverrun(
                    f"replaying to tick {last} took over {self.config.replay_max_seconds:g} s (at tick {hosted.tick})"
                )
            for entry in by_tick.get(hosted.tick + 1, []):
                hosted.pending_events += hosted.play.replay(entry, hosted.tick)
                hosted.sequencer.applied = entry.sequence
            self.step_group([hosted])

    def input_brings_tick_forward(self, session_id: str) -> bool:
        """Whether an input for this session should start the next tick early (see worker.TickSchedule).

        A single player's key shows after one step instead of the rest of the frame interval. A Live world's
        players keep its steady frame rate: with many of them pressing keys, early ticks would multiply the
        frames every one of their browsers is sent, and a key waits at most one interval for the next tick anyway.
        """
        hosted = self.sessions.get(session_id)
        return hosted is not None and not hosted.play.live

    def input_forwarded(self, session_id: str, sequence: int, given: PlayerInput) -> list[WorkerReply]:
        """An input as the platform forwards it, applied in the order of the session's sequence (InputSequencer)."""
        hosted = self.sessions[session_id]
        ready = hosted.sequencer.forwarded(sequence, given, hosted.tick)
        return [reply for number, ready_input in ready for reply in self.input(session_id, number, ready_input)]

    def early_inputs_apply(self, session_id: str) -> list[WorkerReply]:
        """After a reopen applied the log's pending inputs: the ones that came early, in order."""
        hosted = self.sessions[session_id]
        early = hosted.sequencer.early_drained()
        return [reply for number, given in early for reply in self.input(session_id, number, given)]

    def input(self, session_id: str, sequence: int, given: PlayerInput) -> list[WorkerReply]:
        """Apply one logged input at the next tick, exactly once; report the tick and what it became."""
        hosted = self.sessions[session_id]
        if not hosted.sequencer.is_new(sequence):
            return []  # already applied before a failover
        reaction = hosted.play.apply(sequence, given, hosted.tick)
        hosted.pending_events += reaction.events
        hosted.sequencer.applied = sequence
        return self.reacted(hosted, reaction)

    def reacted(self, hosted: HostedSession, reaction: Reaction) -> list[WorkerReply]:
        """Take in what the session's state machine answered: its jobs queue, its messages are returned."""
        for job in reaction.jobs:
            if job.kind == "offer":
                # First in line: the player waits for these with nothing to do, while a reply or a hook's outcome
                # queued before them is already on its way to the screen.
                self.jobs.insert(0, job)
            else:
                self.jobs.append(job)
        hosted.snapshot_due |= reaction.snapshot_due
        return reaction.messages

    def conversation_record(self, session_id: str, character: str, said: str, reply: str) -> None:
        """Keep a finished exchange for the next prompts (run on the engine thread, like every state change)."""
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            hosted.play.conversation_record(character, said, reply)

    def tick(self) -> tuple[list[tuple[Frame, int]], list[WorkerReply]]:
        """Step every running session once (one batch per engine).

        Returns each frame with the session's last applied input sequence, and the messages now due: votes
        that closed and hooks walked into, then snapshots, then a session.missing for early inputs that still
        wait (see HostConfig).
        """
        running = [hosted for hosted in self.sessions.values() if not hosted.play.paused]
        stepped: list[Frame] = []
        due: list[WorkerReply] = []
        for group in engine_groups(running):
            try:
                stepped += self.step_group(group)
            except Exception as error:
                # An engine that fails a batch fails the sessions in it; every other engine's sessions step on.
                logger.exception("a step of %d sessions failed", len(group))
                for hosted in group:
                    self.close(hosted.id)
                    failed = f"this session stopped: its world failed to step ({error})"
                    due.append(SessionError(session=hosted.id, error=failed))
        running = [hosted for hosted in running if hosted.id in self.sessions]
        frames = [(frame, self.sessions[frame.session].sequencer.applied) for frame in stepped]
        now = time.monotonic()
        for hosted in running:
            due += hosted.outbox
            hosted.outbox = []
        for hosted in running:
            if hosted.snapshot_due or now - hosted.last_snapshot_at >= self.config.snapshot_every_seconds:
                due.append(self.snapshot(hosted.id))
        for hosted in running:
            if hosted.sequencer.missing_due(hosted.tick):
                # The platform reopens the session with the inputs after the last applied one.
                due.append(SessionMissing(session=hosted.id, after=hosted.sequencer.applied))
        return frames, due

    def step_group(self, group: list[HostedSession]) -> list[Frame]:
        """Step sessions that share one engine (or have none) by one tick, as one batch.

        A session without an engine (a conversation) has no picture, but its tick moves all the same: votes
        close, a missing input is asked for, and a replay reaches its last tick: with a tick that never moves, a
        conversation's reopen would step forever.
        """
        engine = group[0].engine
        if engine is None:
            for hosted in group:
                hosted.pending_events = []  # world events change no world here
                hosted.tick += 1
                hosted.outbox += self.reacted(hosted, hosted.play.stepped(hosted.tick, None))
            return []
        batch = [
            StepRequest(hosted.id, int(action_from_keys(hosted.play.held_keys)), hosted.pending_events)
            for hosted in group
        ]
        frames = engine.step(batch)
        for hosted, frame in zip(group, frames, strict=True):
            hosted.pending_events = []
            hosted.tick = frame.number
            hosted.outbox += self.reacted(hosted, hosted.play.stepped(hosted.tick, frame.position))
        return frames

    def refresh(self, session_id: str, viewer: str | None = None) -> list[WorkerReply]:
        """What a browser arriving at a running session needs to see at once: where the story stands, for
        that `viewer` alone when it is named."""
        return self.sessions[session_id].play.refresh(viewer)

    def snapshot(self, session_id: str) -> SessionSnapshot:
        hosted = self.sessions[session_id]
        hosted.snapshot_due = False
        hosted.last_snapshot_at = time.monotonic()
        return SessionSnapshot(
            session=session_id,
            tick=hosted.tick,
            sequence=hosted.sequencer.applied,
            engine_state=hosted.engine.snapshot(session_id) if hosted.engine is not None else b"",
            narrative=hosted.play.narrative(),
        )

    def close(self, session_id: str) -> None:
        hosted = self.sessions.pop(session_id, None)
        if hosted is not None and hosted.engine is not None:
            hosted.engine.close(session_id)
        self.jobs = [job for job in self.jobs if job.session != session_id]

    def setting_for(self, narrative: dict[str, Any]) -> Setting:
        setting = Setting.from_message(narrative)
        if self.embedder is not None and setting.intent_hooks:
            setting.intent_embeddings = self.embedder.embed(
                [str(hook.value.get("intent", "")) for hook in setting.intent_hooks]
            )  # (H, D)
        return setting


def engine_groups(hosted_sessions: list[HostedSession]) -> list[list[HostedSession]]:
    """The sessions by the engine that steps them (those without an engine form a group of their own)."""
    by_engine: dict[int, list[HostedSession]] = defaultdict(list)
    for hosted in hosted_sessions:
        by_engine[id(hosted.engine)].append(hosted)
    return list(by_engine.values())
