"""The sessions one worker runs: inputs become held keys and world events, all sessions step as one batch.

Persistence is exact because every input is applied at a known tick, and the host reports that tick (and
the world events the input became) back to the platform, which logs it. A session reopened on another
worker restores its last snapshot and replays the logged inputs at their ticks up to the last frame anyone
saw, then takes pending inputs as new: the same state as if it had never moved, and no input twice.

Narrative work that takes a language model seconds (a character's reply, a beat's choices, a hook's outcome)
never runs here: the host hands it out as `Job`s, which the worker runs on a thread of its own while the
world keeps stepping. What such work decides about the session's state comes back as a proposed input
(`offer`, `hook_outcome`) that the platform logs like any other, so a replay after a failover applies the
same choices and the same branch at the same tick without asking the model again.

A hook waits for the player's response (`active_hook`) from the moment it fires: the line that fired it, if a
line did ("I walk up to the door"), only presents it, and the player's next prompt is the response. A hook
waits at the beat it fired at: when the story moves to another beat (a choice, an own choice, a vote, a
branch), the hook is disarmed, so later words are read afresh; a hook the new beat fires waits in its place.
"""

from __future__ import annotations

import base64
import logging
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from inference import protocol
from inference.engine import Frame, StepRequest, WorldEngine
from inference.language.embedding import Embedder
from inference.narrative.setting import HookRule, Setting
from inference.narrative.world_prompts import WorldPromptClassifier
from inference.play.prompts import events_from_prompt
from inference.play.story import StoryGraph, StoryState
from inference.world.events import narration
from inference.world.state import action_from_keys

logger = logging.getLogger(__name__)

Message = dict[str, Any]
MOVEMENT_KEYS = {"KeyW", "KeyA", "KeyS", "KeyD", "ArrowLeft", "ArrowRight"}
# Sessions of worlds without a picture (a character published on its own) run on no world engine.
CONVERSATION = "conversation"
# Turns of talk with each character a session keeps for the prompt; older turns live on as memories.
CONVERSATION_MESSAGES_KEPT = 12


@dataclass(frozen=True)
class Job:
    """Narrative work for the worker's language-model thread.

    kind: "reply" (a character answers), "offer" (write a beat's choices), "hook" (classify a response to a
    hook into its branches) or "narrate" (a prompt that changes nothing in the world).
    """

    kind: str
    session: str
    setting: Setting | None
    data: dict[str, Any]


@dataclass(frozen=True)
class HostConfig:
    """Pacing of the sessions a worker hosts."""

    # Snapshots every few seconds bound what a failover must replay (about 3 s of inputs and ticks).
    snapshot_every_seconds: float = 3.0
    # A Live world's vote on the choices stays open ten seconds at 20 ticks a second: time to read and pick.
    vote_window_ticks: int = 200
    # A gap in the forwarded inputs is most often an input overtaken on the way (the platform logs inputs on
    # several threads), which comes a moment later: the worker asks for it only when two ticks have passed.
    # Asking at once reopened a busy Live world's session many times a second, each reopen a log query and
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
    id: str
    engine: WorldEngine | None  # None: a conversation, no picture
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
    setting: Setting | None = None
    # The recent talk with each character (by name), as chat messages from the character's side.
    conversations: dict[str, list[Message]] = field(default_factory=dict)
    # The hook waiting for the player's response, and every hook that has fired (each fires once).
    active_hook: str | None = None
    fired_hooks: list[str] = field(default_factory=list)
    # Forwarded inputs that came after a gap in the sequence, by sequence: they wait for the overtaken input, or
    # for the reopen asked for at `missing_ask_at` (SessionHost.input_forwarded).
    early_inputs: dict[int, Message] = field(default_factory=dict)
    missing_ask_at: int | None = None  # the tick to ask for the missing input at, while early inputs wait

    def narrative(self) -> dict[str, Any]:
        return {
            "held_keys": sorted(self.held_keys),
            "participant_keys": {name: sorted(keys) for name, keys in self.participant_keys.items()},
            "paused": self.paused,
            "story": self.story_state.to_dict() if self.story_state else None,
            "votes": self.votes,
            "vote_closes_at": self.vote_closes_at,
            "conversations": self.conversations,
            "active_hook": self.active_hook,
            "fired_hooks": self.fired_hooks,
        }


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

    def open(self, message: Message) -> list[Message]:
        """Open (or reopen after a failover) a session as the platform describes it."""
        session_id = message["session"]
        engine = None if message["engine"] == CONVERSATION else self.engines[message["engine"]]
        snapshot = message.get("snapshot")
        engine_state = base64.b64decode(snapshot["engine_state"]) if snapshot else None
        hosted = HostedSession(
            id=session_id,
            engine=engine,
            engine_session=engine.open_session(message["spec"], engine_state) if engine is not None else "",
            tick=snapshot["tick"] if snapshot else 0,
            applied_sequence=snapshot["sequence"] if snapshot else 0,
        )
        if message.get("narrative"):
            hosted.setting = self.setting_for(message["narrative"])
        if message.get("story"):
            hosted.story = StoryGraph(message["story"])
        narrative = snapshot["narrative"] if snapshot else {}
        hosted.held_keys = set(narrative.get("held_keys", []))
        hosted.participant_keys = {name: set(keys) for name, keys in narrative.get("participant_keys", {}).items()}
        hosted.paused = bool(narrative.get("paused"))
        hosted.live = bool(message.get("live"))
        hosted.votes = dict(narrative.get("votes", {}))
        hosted.vote_closes_at = narrative.get("vote_closes_at")
        hosted.conversations = {name: list(messages) for name, messages in narrative.get("conversations", {}).items()}
        hosted.active_hook = narrative.get("active_hook")
        hosted.fired_hooks = list(narrative.get("fired_hooks", []))
        beginning: list[Message] = []
        if hosted.story is not None:
            story = narrative.get("story")
            hosted.story_state = StoryState.from_dict(story) if story else hosted.story.begin()
            if not story:
                beginning = self.beat_entered(hosted)  # the start beat's hooks fire before any input
        self.sessions[session_id] = hosted
        try:
            self.replay(hosted, message.get("replay", []), message.get("target_tick"))
        except ReplayOverrun as overrun:
            logger.warning("session %s could not reopen: %s", session_id, overrun)
            self.close(session_id)
            return [protocol.session_error_message(
                session=session_id, error=f"this session could not be restored ({overrun}); open it again to retry",
            )]  # fmt: skip
        # What the replay produced was seen before, and its narrative work was done before.
        hosted.outbox.clear()
        self.jobs = [job for job in self.jobs if job.session != session_id]
        outgoing: list[Message] = [{"type": "session.opened", "session": session_id, "tick": hosted.tick}]
        if hosted.story is not None and hosted.story_state is not None:
            self.offer_request(hosted)  # the beat's choices, unless they were written before
            fresh = snapshot is None and not message.get("replay")
            # A player coming back sees where the story stands; one arriving sees it begin.
            outgoing += beginning if fresh else self.story_messages(hosted)
        for pending in message.get("pending", []):
            outgoing += self.input(session_id, pending["sequence"], pending["input"])
        return outgoing

    def replay(self, hosted: HostedSession, logged: list[Message], target_tick: int | None) -> None:
        """Step from the snapshot's tick to `target_tick`, applying each logged input at its tick.

        Every step moves the tick by one (a session without an engine too), so the replay takes exactly
        `last - tick` steps; more than HostConfig.replay_max_ticks, or longer than replay_max_seconds, is a
        ReplayOverrun.
        """
        by_tick: dict[int, list[Message]] = defaultdict(list)
        for entry in sorted(logged, key=lambda entry: entry["sequence"]):
            if entry["sequence"] > hosted.applied_sequence:
                by_tick[entry["tick"]].append(entry)
        last = max([target_tick or hosted.tick, *by_tick]) if by_tick else (target_tick or hosted.tick)
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
        # As `input` did: an outcome and a move to another beat disarm the waiting hook before the new beat's fire.
        kind = entry["input"]["type"]
        moved = bool(entry.get("story")) and kind in ("choice", "own_choice") and not hosted.live
        if moved or (kind == "hook_outcome" and entry["input"].get("hook") == hosted.active_hook):
            hosted.active_hook = None
        for hook in entry.get("hooks", []):
            self.hook_fire(hosted, hook)
        if entry["input"]["type"] == "choice" and hosted.live:
            self.vote(hosted, entry["input"])
        if entry["input"]["type"] in ("pause", "resume"):
            hosted.paused = entry["input"]["type"] == "pause"
        hosted.applied_sequence = entry["sequence"]

    def input_brings_tick_forward(self, session_id: str) -> bool:
        """Whether an input for this session should start the next tick early (see worker.TickSchedule).

        A single player's key shows after one step instead of the rest of the frame interval. A Live world's
        players keep its steady frame rate: with fifty of them pressing keys, early ticks doubled the frames
        every one of their browsers is sent, and a key waits at most one interval for the next tick anyway.
        """
        hosted = self.sessions.get(session_id)
        return hosted is not None and not hosted.live

    def input_forwarded(self, session_id: str, sequence: int, given: Message) -> list[Message]:
        """An input as the platform forwards it, applied in the order of the session's sequence.

        One that comes after a gap waits: the input before it was overtaken (it comes a moment later and fills
        the gap), or lost on the way (a channel layer drops the oldest messages of a consumer that falls
        behind). If the gap is still open a couple of ticks later, `tick` asks the platform to reopen the
        session (`session.missing`), and the reopen's pending inputs, from the log, fill it
        (`early_inputs_apply`).
        """
        hosted = self.sessions[session_id]
        if sequence > hosted.applied_sequence + 1:
            hosted.early_inputs[sequence] = given
            if hosted.missing_ask_at is None:
                hosted.missing_ask_at = hosted.tick + self.config.missing_wait_ticks
            return []
        replies = self.input(session_id, sequence, given)
        while hosted.applied_sequence + 1 in hosted.early_inputs:
            following = hosted.applied_sequence + 1
            replies += self.input(session_id, following, hosted.early_inputs.pop(following))
        if not hosted.early_inputs:
            hosted.missing_ask_at = None
        return replies

    def missing(self, hosted: HostedSession) -> Message:
        """Ask the platform for the inputs after the last applied one (it reopens the session with them)."""
        return {"type": "session.missing", "session": hosted.id, "after": hosted.applied_sequence}

    def early_inputs_apply(self, session_id: str) -> list[Message]:
        """After a reopen applied the log's pending inputs: the ones that came early, in order. The log is
        whole, so a number still missing was never logged (an input refused after it was numbered)."""
        hosted = self.sessions[session_id]
        early, hosted.early_inputs = hosted.early_inputs, {}
        hosted.missing_ask_at = None
        replies: list[Message] = []
        for sequence in sorted(early):
            replies += self.input(session_id, sequence, early[sequence])
        return replies

    def input(self, session_id: str, sequence: int, given: Message) -> list[Message]:
        """Apply one logged input at the next tick; report the tick and what it became."""
        hosted = self.sessions[session_id]
        if sequence <= hosted.applied_sequence:
            return []  # already applied before a failover: exactly once
        kind = given["type"]
        story_before = hosted.story_state.to_dict() if hosted.story_state else None
        hooks_before = len(hosted.fired_hooks)
        events: list[dict[str, Any]] = []
        outgoing: list[Message] = []
        try:
            if kind in ("key_down", "key_up") and "participant" in given:
                events = self.avatar_events(hosted, given)
            elif kind in ("key_down", "key_up"):
                self.change_keys(hosted, given)
            elif kind == "prompt":
                events, outgoing = self.prompt(hosted, given)
            elif kind == "speech":
                outgoing = self.speech(hosted, given, sequence)
            elif kind == "choice" and hosted.live and hosted.story is not None:
                outgoing = self.vote(hosted, given)
            elif kind == "choice" and hosted.story is not None and hosted.story_state is not None:
                hosted.story_state = hosted.story.choose(hosted.story_state, given["index"])
                outgoing = self.beat_entered(hosted)
            elif kind == "offer":
                outgoing = self.offer(hosted, given)
            elif kind == "own_choice":
                outgoing = self.own_choice(hosted, given)
            elif kind == "hook_outcome":
                events, outgoing = self.hook_outcome(hosted, given)
            elif kind in ("pause", "resume"):
                hosted.paused = kind == "pause"
            else:
                raise ValueError(f"this worker cannot handle {kind!r} inputs")
        except ValueError as error:
            outgoing = [protocol.session_error_message(session=session_id, error=str(error), sequence=sequence)]
        hosted.pending_events += events
        hosted.applied_sequence = sequence
        applied = {"type": "session.applied", "session": session_id, "sequence": sequence, "tick": hosted.tick + 1,
                   "events": events}  # fmt: skip
        story_after = hosted.story_state.to_dict() if hosted.story_state else None
        if story_after != story_before:
            applied["story"] = story_after
            hosted.snapshot_due = True
        if len(hosted.fired_hooks) > hooks_before:
            applied["hooks"] = hosted.fired_hooks[hooks_before:]
        return [applied, *outgoing]

    def prompt(self, hosted: HostedSession, given: Message) -> tuple[list[dict[str, Any]], list[Message]]:
        """A typed prompt: the response to a hook that waits for one; else world events when it asks for a change
        of the world ("a lantern appears"), told by what they change ("A lantern appears."); else a hook the words
        fire, presented; else the narrator's turn. A hook comes first: "I hand over my lantern" answers the
        guardian blocking the way, it does not conjure a lantern."""
        text = given["text"]
        if hosted.active_hook is not None:
            self.jobs.append(Job("hook", hosted.id, hosted.setting, {"hook": hosted.active_hook, "text": text}))
            return [], []
        events = self.world_prompts.events(text) if self.world_prompts is not None else events_from_prompt(text)
        if events:
            told = narration(events) or "The world changes."
            return events, [{"type": "session.narration", "session": hosted.id, "text": told}]
        hooks_before = len(hosted.fired_hooks)
        outgoing = self.hooks_fired_by_text(hosted, given)
        if len(hosted.fired_hooks) == hooks_before:
            state = hosted.story_state
            # In a story, words typed at a beat may be the player's own choice: the narrator reads them.
            offered = state.offered if state is not None and not state.ended and not hosted.live else None
            self.jobs.append(Job("narrate", hosted.id, hosted.setting, {
                "text": text, "beat": state.beat if state else None, "offered": offered,
            }))  # fmt: skip
        return [], outgoing

    def speech(self, hosted: HostedSession, given: Message, sequence: int) -> list[Message]:
        """Words to a character: the reply is a job; a hook the words fire is presented at once."""
        setting = hosted.setting
        if setting is None or given["character"] not in setting.cast:
            raise ValueError(f"there is no character called {given['character']!r} here")
        state = hosted.story_state
        self.jobs.append(
            Job("reply", hosted.id, setting, {
                "character": setting.cast[given["character"]], "text": given["text"], "sequence": sequence,
                "speaker": given.get("participant"),
                "history": list(hosted.conversations.get(given["character"], [])),
                "beat": state.beat if state else None, "flags": list(state.flags) if state else [],
                "revealed_clues": list(state.revealed_clues) if state else [],
            })
        )  # fmt: skip
        return self.hooks_fired_by_text(hosted, given)

    def hooks_fired_by_text(self, hosted: HostedSession, given: Message) -> list[Message]:
        """Fire the first unfired keyword or intent hook the text meets. The text only presents it: "I walk up to
        the door" is no response to the door, the player's next prompt is."""
        setting = hosted.setting
        if setting is None:
            return []
        candidates = [hook for hook in setting.hooks if hook.name not in hosted.fired_hooks]
        if not any(hook.trigger in ("keywords", "intent") for hook in candidates):
            return []
        similarity = self.intent_similarities(setting, given["text"])
        for hook in candidates:
            if hook.fired_by_text(given["text"], similarity.get(hook.name)):
                return self.hook_fire(hosted, hook.name)
        return []

    def intent_similarities(self, setting: Setting, text: str) -> dict[str, float]:
        """Each intent hook's cosine to `text` (empty without an embedder)."""
        if self.embedder is None or setting.intent_embeddings is None:
            return {}
        query = self.embedder.embed([text])[0]  # (D,)
        cosines = setting.intent_embeddings @ query  # (H,)
        return {hook.name: float(cosine) for hook, cosine in zip(setting.intent_hooks, cosines, strict=True)}

    def setting_for(self, narrative: dict[str, Any]) -> Setting:
        setting = Setting.from_message(narrative)
        if self.embedder is not None and setting.intent_hooks:
            setting.intent_embeddings = self.embedder.embed(
                [str(hook.value.get("intent", "")) for hook in setting.intent_hooks]
            )  # (H, D)
        return setting

    def hook_fire(self, hosted: HostedSession, name: str) -> list[Message]:
        """The hook waits for the player's response; the world presents it."""
        hook = hosted.setting.hook(name) if hosted.setting else None
        if hook is None or name in hosted.fired_hooks:
            return []
        hosted.fired_hooks.append(name)
        hosted.active_hook = name
        if not hook.presentation:
            return []
        return [{"type": "session.narration", "session": hosted.id, "text": hook.presentation}]

    def hooks_fired_by_story(self, hosted: HostedSession) -> list[Message]:
        """Fire the hooks that the story's beat or flags now meet."""
        if hosted.setting is None or hosted.story_state is None:
            return []
        state = hosted.story_state
        fired: list[HookRule] = [
            *hosted.setting.hooks_fired_by_beat(state.beat),
            *hosted.setting.hooks_fired_by_flags(state.flags),
        ]
        outgoing: list[Message] = []
        for hook in fired:
            outgoing += self.hook_fire(hosted, hook.name)
        return outgoing

    def beat_entered(self, hosted: HostedSession) -> list[Message]:
        """The story reached a beat: show its scene, have its choices written, fire the hooks waiting there.

        A hook still waiting from the beat left behind is disarmed: the story moved on without its response."""
        assert hosted.story is not None and hosted.story_state is not None
        hosted.active_hook = None
        self.offer_request(hosted)
        return self.story_messages(hosted) + self.hooks_fired_by_story(hosted)

    def offer_request(self, hosted: HostedSession) -> None:
        assert hosted.story is not None and hosted.story_state is not None
        state = hosted.story_state
        if state.ended or state.offered is not None:
            return
        # First in line: the player waits for these with nothing to do, while a reply or a hook's outcome
        # queued before them is already on its way to the screen.
        self.jobs.insert(0,
            Job("offer", hosted.id, hosted.setting, {
                "beat": state.beat, "scene": hosted.story.scene(state), "guidance": hosted.story.guidance(state),
                "authored": hosted.story.authored(state),
                # Repeatable per visit: the same beat reached again gets its choices written afresh.
                "seed": hash_seed(hosted.id, state.beat, hosted.tick),
            })
        )  # fmt: skip

    def offer(self, hosted: HostedSession, given: Message) -> list[Message]:
        """The choices written for a beat (logged, so a replay offers the same); stale when the story moved on."""
        state = hosted.story_state
        if hosted.story is None or state is None or state.beat != given["beat"] or state.offered is not None:
            return []
        state.offered = [{"text": str(choice["text"]), "to": str(choice["to"])} for choice in given["choices"]]
        return [self.choices_message(hosted)]

    def own_choice(self, hosted: HostedSession, given: Message) -> list[Message]:
        """Words the player typed read as one of the offered choices: the story goes where that one leads."""
        if hosted.story is None or hosted.story_state is None or hosted.story_state.beat != given["beat"]:
            return []  # the story moved on meanwhile
        taken = {"type": "session.narration", "session": hosted.id, "text": f"You choose: {given['text']}"}
        hosted.story_state = hosted.story.choose(hosted.story_state, int(given["index"]))
        return [taken, *self.beat_entered(hosted)]

    def hook_outcome(self, hosted: HostedSession, given: Message) -> tuple[list[dict[str, Any]], list[Message]]:
        """Apply the branch a response was classified into (or the fallback's narration) to the session; stale when
        the hook no longer waits (the story moved on while the response was being classified)."""
        if given.get("hook") != hosted.active_hook:
            return [], []
        hosted.active_hook = None
        effects = given.get("effects") or {}
        outgoing: list[Message] = []
        narration = effects.get("narration") or given.get("narration")
        if narration:
            outgoing.append({"type": "session.narration", "session": hosted.id, "text": str(narration)})
        state = hosted.story_state
        if state is not None:
            state.flags += [flag for flag in effects.get("set_flags", []) if flag not in state.flags]
            revealed = effects.get("reveal_clues", [])
            state.revealed_clues += [clue for clue in revealed if clue not in state.revealed_clues]
            if effects.get("move_to_beat") and hosted.story is not None:
                hosted.story_state = hosted.story.move(state, effects["move_to_beat"])
                outgoing += self.beat_entered(hosted)
            else:
                outgoing += self.hooks_fired_by_story(hosted)
        return list(effects.get("world_events", [])), outgoing

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
            return [protocol.session_error_message(session=hosted.id, error=f"there is no choice {given['index']}")]
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
        return [announced, *self.beat_entered(hosted)]

    def story_messages(self, hosted: HostedSession) -> list[Message]:
        """Where the story stands: the beat's scene and its choices, none while they are being written (the
        player then says that the story is thinking, however the beat was reached)."""
        assert hosted.story is not None and hosted.story_state is not None
        scene = hosted.story.scene(hosted.story_state)
        return [{"type": "session.narration", "session": hosted.id, "text": scene}, self.choices_message(hosted)]

    def choices_message(self, hosted: HostedSession) -> Message:
        assert hosted.story is not None and hosted.story_state is not None
        state = hosted.story_state
        return {"type": "session.choices", "session": hosted.id, "beat": state.beat,
                "choices": hosted.story.choices(state), "ended": state.ended}  # fmt: skip

    def conversation_record(self, session_id: str, character: str, said: str, reply: str) -> None:
        """Keep a finished exchange for the next prompts (run on the engine thread, like every state change)."""
        hosted = self.sessions.get(session_id)
        if hosted is None:
            return
        turns = hosted.conversations.setdefault(character, [])
        turns += [{"role": "user", "content": said}, {"role": "assistant", "content": reply}]
        del turns[:-CONVERSATION_MESSAGES_KEPT]

    def tick(self) -> tuple[list[tuple[Frame, int]], list[Message]]:
        """Step every running session once (one batch per engine).

        Returns each frame with the session's last applied input sequence, and the messages now due: votes
        that closed, then snapshots, then a session.missing for early inputs that still wait (see HostConfig).
        """
        running = [hosted for hosted in self.sessions.values() if not hosted.paused]
        stepped: list[Frame] = []
        due: list[Message] = []
        for group in engine_groups(running):
            try:
                stepped += self.step_group(group)
            except Exception as error:
                # An engine that fails a batch fails the sessions in it; every other engine's sessions step on.
                logger.exception("a step of %d sessions failed", len(group))
                for hosted in group:
                    self.close(hosted.id)
                    due.append(protocol.session_error_message(
                        session=hosted.id, error=f"this session stopped: its world failed to step ({error})",
                    ))  # fmt: skip
        running = [hosted for hosted in running if hosted.id in self.sessions]
        frames = [(frame, self.sessions[frame.session].applied_sequence) for frame in stepped]
        now = time.monotonic()
        due += [message for hosted in running for message in hosted.outbox]
        for hosted in running:
            hosted.outbox = []
        for hosted in running:
            if hosted.snapshot_due or now - hosted.last_snapshot_at >= self.config.snapshot_every_seconds:
                due.append(self.snapshot(hosted.id))
        for hosted in running:
            if hosted.missing_ask_at is not None and hosted.tick >= hosted.missing_ask_at:
                hosted.missing_ask_at = hosted.tick + self.config.missing_ask_again_ticks
                due.append(self.missing(hosted))
        return frames, due

    def step_sessions(self, hosted_sessions: list[HostedSession]) -> list[Frame]:
        return [frame for group in engine_groups(hosted_sessions) for frame in self.step_group(group)]

    def step_group(self, group: list[HostedSession]) -> list[Frame]:
        """Step sessions that share one engine (or have none) by one tick, as one batch.

        A session without an engine (a conversation) has no picture, but its tick moves all the same: votes
        close, a missing input is asked for, and a replay reaches its last tick. A tick that never moved made a
        conversation's reopen step forever.
        """
        engine = group[0].engine
        if engine is None:
            for hosted in group:
                hosted.pending_events = []  # world events change no world here
                hosted.tick += 1
                self.vote_close_if_due(hosted)
            return []
        batch = [
            StepRequest(hosted.engine_session, int(action_from_keys(hosted.held_keys)), hosted.pending_events)
            for hosted in group
        ]
        frames = []
        for hosted, frame in zip(group, engine.step(batch), strict=True):
            hosted.pending_events = []
            hosted.tick = frame.number
            frames.append(Frame(hosted.id, frame.number, frame.jpeg, frame.position))
            self.vote_close_if_due(hosted)
            hosted.outbox += self.hooks_fired_at(hosted, frame.position)
        return frames

    def vote_close_if_due(self, hosted: HostedSession) -> None:
        if hosted.vote_closes_at is not None and hosted.tick >= hosted.vote_closes_at:
            hosted.outbox += self.vote_close(hosted)

    def hooks_fired_at(self, hosted: HostedSession, position: tuple[float, float]) -> list[Message]:
        """Fire the area hooks whose circle the player has walked into (deterministic, so replays agree)."""
        if hosted.setting is None:
            return []
        outgoing: list[Message] = []
        for hook in hosted.setting.hooks:
            if hook.name not in hosted.fired_hooks and hook.fired_at(position):
                outgoing += self.hook_fire(hosted, hook.name)
                hosted.snapshot_due = True
        return outgoing

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
            "engine_state": base64.b64encode(
                hosted.engine.snapshot(hosted.engine_session) if hosted.engine is not None else b""
            ).decode(),
            "narrative": hosted.narrative(),
        }

    def close(self, session_id: str) -> None:
        hosted = self.sessions.pop(session_id, None)
        if hosted is not None and hosted.engine is not None:
            hosted.engine.close(hosted.engine_session)
        self.jobs = [job for job in self.jobs if job.session != session_id]


def engine_groups(hosted_sessions: list[HostedSession]) -> list[list[HostedSession]]:
    """The sessions by the engine that steps them (those without an engine form a group of their own)."""
    by_engine: dict[int, list[HostedSession]] = defaultdict(list)
    for hosted in hosted_sessions:
        by_engine[id(hosted.engine)].append(hosted)
    return list(by_engine.values())


def hash_seed(*parts: Any) -> int:
    """A seed that is the same in every process for the same parts (Python's own hash of a str is not)."""
    return zlib.crc32("|".join(map(str, parts)).encode())
