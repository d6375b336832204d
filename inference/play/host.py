"""The sessions one worker runs: inputs become held keys and world events, all sessions step as one batch.

Persistence is exact because every input is applied at a known tick, and the host reports that tick (and
the world events the input became) back to the platform, which logs it. A session reopened on another
worker restores its last snapshot and replays the logged inputs at their ticks up to the last frame anyone
saw, then takes pending inputs as new: the same state as if it had never moved, and no input twice.
"""

from __future__ import annotations

import base64
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from inference.engine import Frame, StepRequest, WorldEngine
from inference.play.prompts import events_from_prompt
from inference.play.story import StoryGraph, StoryState
from inference.world.state import action_from_keys

Message = dict[str, Any]
MOVEMENT_KEYS = {"KeyW", "KeyA", "KeyS", "KeyD", "ArrowLeft", "ArrowRight"}


@dataclass(frozen=True)
class HostConfig:
    """Pacing of the sessions a worker hosts."""

    # Snapshots every few seconds bound what a failover must replay (about 3 s of inputs and ticks).
    snapshot_every_seconds: float = 3.0
    # A Live world's vote on the choices stays open ten seconds at 20 ticks a second: time to read and pick.
    vote_window_ticks: int = 200


@dataclass
class HostedSession:
    id: str
    engine: WorldEngine
    engine_session: str
    tick: int
    applied_sequence: int = 0
    held_keys: set[str] = field(default_factory=set)
    # Live worlds: each other participant's held keys, which walk their avatar.
    participant_keys: dict[str, set[str]] = field(default_factory=dict)
    pending_events: list[dict[str, Any]] = field(default_factory=list)
    paused: bool = False
    story: StoryGraph | None = None
    story_state: StoryState | None = None
    # Live worlds vote on choices: each voter's pick, and the tick the vote closes at (None: no vote open).
    live: bool = False
    votes: dict[str, int] = field(default_factory=dict)
    vote_closes_at: int | None = None
    # Messages produced while stepping (a vote closing), sent with the tick's frames.
    outbox: list[Message] = field(default_factory=list)
    snapshot_due: bool = True
    last_snapshot_at: float = 0.0

    def narrative(self) -> dict[str, Any]:
        return {
            "held_keys": sorted(self.held_keys),
            "participant_keys": {name: sorted(keys) for name, keys in self.participant_keys.items()},
            "paused": self.paused,
            "story": self.story_state.to_dict() if self.story_state else None,
            "votes": self.votes,
            "vote_closes_at": self.vote_closes_at,
        }


class SessionHost:
    """Every session of one worker, stepped together; fed messages, it returns messages to send."""

    def __init__(self, engines: dict[str, WorldEngine], config: HostConfig = HostConfig()) -> None:
        self.engines = engines
        self.config = config
        self.sessions: dict[str, HostedSession] = {}

    def open(self, message: Message) -> list[Message]:
        """Open (or reopen after a failover) a session as the platform describes it."""
        session_id = message["session"]
        engine = self.engines[message["engine"]]
        snapshot = message.get("snapshot")
        engine_state = base64.b64decode(snapshot["engine_state"]) if snapshot else None
        hosted = HostedSession(
            id=session_id,
            engine=engine,
            engine_session=engine.open_session(message["spec"], engine_state),
            tick=snapshot["tick"] if snapshot else 0,
            applied_sequence=snapshot["sequence"] if snapshot else 0,
        )
        if message.get("story"):
            hosted.story = StoryGraph(message["story"])
        narrative = snapshot["narrative"] if snapshot else {}
        hosted.held_keys = set(narrative.get("held_keys", []))
        hosted.participant_keys = {name: set(keys) for name, keys in narrative.get("participant_keys", {}).items()}
        hosted.paused = bool(narrative.get("paused"))
        hosted.live = bool(message.get("live"))
        hosted.votes = dict(narrative.get("votes", {}))
        hosted.vote_closes_at = narrative.get("vote_closes_at")
        if hosted.story is not None:
            story = narrative.get("story")
            hosted.story_state = StoryState.from_dict(story) if story else hosted.story.begin()
        self.sessions[session_id] = hosted
        self.replay(hosted, message.get("replay", []), message.get("target_tick"))
        hosted.outbox.clear()  # what the replay produced was seen before; the story is sent below
        outgoing: list[Message] = [{"type": "session.opened", "session": session_id, "tick": hosted.tick}]
        if hosted.story is not None:
            outgoing += self.story_messages(hosted)  # a player coming back sees where the story stands
        for pending in message.get("pending", []):
            outgoing += self.input(session_id, pending["sequence"], pending["input"])
        return outgoing

    def replay(self, hosted: HostedSession, logged: list[Message], target_tick: int | None) -> None:
        """Step from the snapshot's tick to `target_tick`, applying each logged input at its tick."""
        by_tick: dict[int, list[Message]] = defaultdict(list)
        for entry in sorted(logged, key=lambda entry: entry["sequence"]):
            if entry["sequence"] > hosted.applied_sequence:
                by_tick[entry["tick"]].append(entry)
        last = max([target_tick or hosted.tick, *by_tick]) if by_tick else (target_tick or hosted.tick)
        while hosted.tick < last:
            for entry in by_tick.get(hosted.tick + 1, []):
                self.apply_logged(hosted, entry)
            self.step_sessions([hosted])

    def apply_logged(self, hosted: HostedSession, entry: Message) -> None:
        """Re-apply an input exactly as it was first applied, from what the log recorded."""
        if "participant" in entry["input"]:
            self.avatar_events(hosted, entry["input"])  # its events are in the log; this restores the held keys
        else:
            self.change_keys(hosted, entry["input"])
        hosted.pending_events += entry.get("events", [])
        if entry.get("story"):
            hosted.story_state = StoryState.from_dict(entry["story"])
        if entry["input"]["type"] == "choice" and hosted.live:
            self.vote(hosted, entry["input"])
        if entry["input"]["type"] in ("pause", "resume"):
            hosted.paused = entry["input"]["type"] == "pause"
        hosted.applied_sequence = entry["sequence"]

    def input(self, session_id: str, sequence: int, given: Message) -> list[Message]:
        """Apply one logged input at the next tick; report the tick and what it became."""
        hosted = self.sessions[session_id]
        if sequence <= hosted.applied_sequence:
            return []  # already applied before a failover: exactly once
        kind = given["type"]
        events: list[dict[str, Any]] = []
        outgoing: list[Message] = []
        if kind in ("key_down", "key_up") and "participant" in given:
            events = self.avatar_events(hosted, given)
        elif kind in ("key_down", "key_up"):
            self.change_keys(hosted, given)
        elif kind == "prompt":
            events = events_from_prompt(given["text"])
            text = "The world changes." if events else "Nothing in the world answers that yet."
            outgoing.append({"type": "session.narration", "session": session_id, "text": text})
        elif kind == "choice" and hosted.live and hosted.story is not None:
            outgoing += self.vote(hosted, given)
        elif kind == "choice" and hosted.story is not None and hosted.story_state is not None:
            try:
                hosted.story_state = hosted.story.choose(hosted.story_state, given["index"])
            except ValueError as error:
                outgoing.append({"type": "session.error", "session": session_id, "sequence": sequence,
                                 "error": str(error)})  # fmt: skip
            else:
                outgoing += self.story_messages(hosted)
                hosted.snapshot_due = True
        elif kind in ("pause", "resume"):
            hosted.paused = kind == "pause"
        else:
            outgoing.append({"type": "session.error", "session": session_id, "sequence": sequence,
                             "error": f"this worker cannot handle {kind!r} inputs"})  # fmt: skip
        hosted.pending_events += events
        hosted.applied_sequence = sequence
        applied = {"type": "session.applied", "session": session_id, "sequence": sequence, "tick": hosted.tick + 1,
                   "events": events}  # fmt: skip
        if kind == "choice" and hosted.story_state is not None and not hosted.live:
            applied["story"] = hosted.story_state.to_dict()
        return [applied, *outgoing]

    @staticmethod
    def change_keys(hosted: HostedSession, given: Message) -> None:
        key = given.get("key")
        if given["type"] == "key_down" and key in MOVEMENT_KEYS:
            hosted.held_keys.add(key)
        elif given["type"] == "key_up":
            hosted.held_keys.discard(key)

    @staticmethod
    def avatar_events(hosted: HostedSession, given: Message) -> list[dict[str, Any]]:
        """A Live participant's keys walk their avatar: it joins on their first key, then moves as they hold."""
        name = given["participant"]
        events: list[dict[str, Any]] = []
        if name not in hosted.participant_keys:
            hosted.participant_keys[name] = set()
            events.append({"kind": "join", "name": name})
        keys = hosted.participant_keys[name]
        if given["type"] == "key_down" and given.get("key") in MOVEMENT_KEYS:
            keys.add(given["key"])
        else:
            keys.discard(given.get("key"))
        events.append({"kind": "move", "name": name, "action": int(action_from_keys(keys))})
        return events

    def vote(self, hosted: HostedSession, given: Message) -> list[Message]:
        """Record a Live participant's pick; the first vote opens a window, the majority is taken as it closes."""
        assert hosted.story is not None and hosted.story_state is not None
        options = hosted.story.choices(hosted.story_state)
        if not 0 <= given["index"] < len(options):
            return [{"type": "session.error", "session": hosted.id, "error": f"there is no choice {given['index']}"}]
        hosted.votes[given.get("participant", "owner")] = given["index"]
        if hosted.vote_closes_at is None:
            hosted.vote_closes_at = hosted.tick + 1 + self.config.vote_window_ticks
        tally = [list(hosted.votes.values()).count(index) for index in range(len(options))]
        return [
            {"type": "session.votes", "session": hosted.id, "tally": tally, "closes_at_tick": hosted.vote_closes_at}
        ]

    def vote_close(self, hosted: HostedSession) -> list[Message]:
        """Take the choice most voted for (on a tie, the first of them) and move the story on."""
        assert hosted.story is not None and hosted.story_state is not None
        options = hosted.story.choices(hosted.story_state)
        tally = [list(hosted.votes.values()).count(index) for index in range(len(options))]
        chosen = tally.index(max(tally))
        hosted.votes, hosted.vote_closes_at = {}, None
        hosted.story_state = hosted.story.choose(hosted.story_state, chosen)
        hosted.snapshot_due = True
        announced = {"type": "session.narration", "session": hosted.id, "text": f"The vote chose: {options[chosen]}"}
        return [announced, *self.story_messages(hosted)]

    def story_messages(self, hosted: HostedSession) -> list[Message]:
        assert hosted.story is not None and hosted.story_state is not None
        state = hosted.story_state
        messages: list[Message] = [
            {"type": "session.narration", "session": hosted.id, "text": hosted.story.scene(state)},
            {"type": "session.choices", "session": hosted.id, "beat": state.beat,
             "choices": hosted.story.choices(state), "ended": state.ended},
        ]  # fmt: skip
        return messages

    def tick(self) -> tuple[list[tuple[Frame, int]], list[Message]]:
        """Step every running session once (one batch per engine).

        Returns each frame with the session's last applied input sequence, and the messages now due: votes
        that closed, then snapshots.
        """
        running = [hosted for hosted in self.sessions.values() if not hosted.paused]
        frames = [(frame, self.sessions[frame.session].applied_sequence) for frame in self.step_sessions(running)]
        now = time.monotonic()
        due = [message for hosted in running for message in hosted.outbox]
        for hosted in running:
            hosted.outbox = []
        for hosted in running:
            if hosted.snapshot_due or now - hosted.last_snapshot_at >= self.config.snapshot_every_seconds:
                due.append(self.snapshot(hosted.id))
        return frames, due

    def step_sessions(self, hosted_sessions: list[HostedSession]) -> list[Frame]:
        by_engine: dict[int, list[HostedSession]] = defaultdict(list)
        for hosted in hosted_sessions:
            by_engine[id(hosted.engine)].append(hosted)
        frames = []
        for group in by_engine.values():
            batch = [
                StepRequest(hosted.engine_session, int(action_from_keys(hosted.held_keys)), hosted.pending_events)
                for hosted in group
            ]
            stepped = group[0].engine.step(batch)
            for hosted, frame in zip(group, stepped, strict=True):
                hosted.pending_events = []
                hosted.tick = frame.number
                frames.append(Frame(hosted.id, frame.number, frame.jpeg))
                if hosted.vote_closes_at is not None and hosted.tick >= hosted.vote_closes_at:
                    hosted.outbox += self.vote_close(hosted)
        return frames

    def refresh(self, session_id: str) -> list[Message]:
        """What a browser arriving at a running session needs to see at once: where the story stands."""
        hosted = self.sessions[session_id]
        return self.story_messages(hosted) if hosted.story is not None else []

    def snapshot(self, session_id: str) -> Message:
        hosted = self.sessions[session_id]
        hosted.snapshot_due = False
        hosted.last_snapshot_at = time.monotonic()
        return {
            "type": "session.snapshot",
            "session": session_id,
            "tick": hosted.tick,
            "sequence": hosted.applied_sequence,
            "engine_state": base64.b64encode(hosted.engine.snapshot(hosted.engine_session)).decode(),
            "narrative": hosted.narrative(),
        }

    def close(self, session_id: str) -> None:
        hosted = self.sessions.pop(session_id, None)
        if hosted is not None:
            hosted.engine.close(hosted.engine_session)
