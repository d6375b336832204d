"""A session's story, hooks, votes and held keys as a state machine: inputs and ticks in, messages and jobs out.

It does no I/O and reads no clock: the host gives it each input with the tick it applies at, and each tick as
the session steps. What it answers is a `Reaction`: the messages for the platform, the narrative `Job`s for the
worker's language thread, the world events for the engine's next step.

A hook waits for the player's response (`active_hook`) from the moment it fires: the line that fired it, if a
line did ("I walk up to the door"), only presents it, and the player's next prompt is the response. A hook
waits at the beat it fired at: when the story moves to another beat (a choice, an own choice, a vote, a
branch), the hook is disarmed, so later words are read afresh; a hook the new beat fires waits in its place.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from inference.controls import KEYS
from inference.language.embedding import Embedder
from inference.narrative.setting import HookRule, Setting
from inference.narrative.world_prompts import WorldPromptClassifier
from inference.play.prompts import events_from_prompt, unchanged_reason
from inference.play.story import StoryGraph
from inference.protocol import (
    NarrativeState,
    PlayerInput,
    ReplayedInput,
    SessionApplied,
    SessionChoices,
    SessionError,
    SessionNarration,
    SessionVotes,
    WorkerReply,
    WorldEvent,
)
from inference.world.events import narration
from inference.world.state import action_from_keys

# Messages of talk with each character a session keeps: the prompt takes the last few turns of them, and a
# reply is checked against all of them so that a character does not say a line of its own again ten turns
# later; older turns live on as memories.
CONVERSATION_MESSAGES_KEPT = 40


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


@dataclass
class Reaction:
    """What the state machine answers to an input or a tick."""

    messages: list[WorkerReply] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    events: list[WorldEvent] = field(default_factory=list)  # for the engine's next step
    snapshot_due: bool = False  # the state changed in a way a failover must not replay from further back


class PlayStateMachine:
    """One session's narrative state and the rules that move it."""

    def __init__(
        self,
        session: str,
        *,
        narrative: NarrativeState,
        setting: Setting | None = None,
        story: StoryGraph | None = None,
        live: bool = False,
        vote_window_ticks: int = 200,
        embedder: Embedder | None = None,
        world_prompts: WorldPromptClassifier | None = None,
    ) -> None:
        self.session = session
        self.setting = setting
        self.story = story
        self.live = live
        self.vote_window_ticks = vote_window_ticks
        self.embedder = embedder
        # Without an embedder, typed prompts fall back to the keyword list.
        self.world_prompts = world_prompts
        self.held_keys = set(narrative.held_keys)
        self.participant_keys = {name: set(keys) for name, keys in narrative.participant_keys.items()}
        self.paused = narrative.paused
        self.story_state = narrative.story.copy() if narrative.story is not None else None
        self.votes = dict(narrative.votes)
        self.vote_closes_at = narrative.vote_closes_at
        self.conversations = {name: list(turns) for name, turns in narrative.conversations.items()}
        self.active_hook = narrative.active_hook
        self.fired_hooks = list(narrative.fired_hooks)
        self._jobs: list[Job] = []
        self._snapshot_due = False

    def narrative(self) -> NarrativeState:
        return NarrativeState(
            held_keys=sorted(self.held_keys),
            participant_keys={name: sorted(keys) for name, keys in self.participant_keys.items()},
            paused=self.paused,
            story=self.story_state.copy() if self.story_state is not None else None,
            votes=dict(self.votes),
            vote_closes_at=self.vote_closes_at,
            conversations={name: list(turns) for name, turns in self.conversations.items()},
            active_hook=self.active_hook,
            fired_hooks=list(self.fired_hooks),
        )

    # What the host calls

    def begin(self, tick: int) -> list[WorkerReply]:
        """A story's first beat, before any input: its hooks fire. Returns what a player arriving sees."""
        if self.story is None or self.story_state is not None:
            return []
        self.story_state = self.story.begin()
        return self._reaction(self.beat_entered(tick)).messages

    def opened(self, tick: int, *, arriving: list[WorkerReply] | None) -> Reaction:
        """The session runs: the beat's choices are written unless they were before; a player arriving sees
        `arriving` (the story beginning), one coming back sees where the story stands."""
        if self.story is None or self.story_state is None:
            return self._reaction([])
        self.offer_request(tick)
        return self._reaction(arriving if arriving is not None else self.story_messages(retold=True))

    def apply(self, sequence: int, given: PlayerInput, tick: int) -> Reaction:
        """Apply one logged input at the next tick; report the tick and what it became."""
        kind = given["type"]
        story_before = self.story_state.copy() if self.story_state else None
        hooks_before = len(self.fired_hooks)
        events: list[WorldEvent] = []
        outgoing: list[WorkerReply] = []
        try:
            if kind in ("key_down", "key_up") and "participant" in given:
                events = self.avatar_events(given)
            elif kind in ("key_down", "key_up"):
                self.change_keys(given)
            elif kind == "prompt":
                events, outgoing = self.prompt(given, tick)
            elif kind == "speech":
                events, outgoing = self.speech(given, sequence)
            elif kind == "choice" and self.live and self.story is not None:
                outgoing = self.vote(given, tick, sequence)
            elif kind == "choice" and self.story is not None and self.story_state is not None:
                self.story_state = self.story.choose(self.story_state, given["index"])
                outgoing = self.beat_entered(tick)
            elif kind == "offer":
                outgoing = self.offer(given)
            elif kind == "own_choice":
                outgoing = self.own_choice(given, tick)
            elif kind == "hook_outcome":
                events, outgoing = self.hook_outcome(given, tick)
            elif kind in ("pause", "resume"):
                self.paused = kind == "pause"
            else:
                raise ValueError(f"this worker cannot handle {kind!r} inputs")
        except ValueError as error:
            outgoing = [SessionError(session=self.session, error=str(error), sequence=sequence)]
        story_after = self.story_state.copy() if self.story_state else None
        changed = story_after != story_before
        self._snapshot_due |= changed
        applied = SessionApplied(
            session=self.session,
            sequence=sequence,
            tick=tick + 1,
            events=events,
            story=story_after if changed else None,
            hooks=self.fired_hooks[hooks_before:],
        )
        reaction = self._reaction([applied, *outgoing])
        reaction.events = events
        return reaction

    def replay(self, entry: ReplayedInput, tick: int) -> list[WorldEvent]:
        """Re-apply an input exactly as it was first applied, from what the log recorded; returns its world events
        (the log's, so no model is asked again). Its messages and jobs were seen and done before."""
        given = entry.input
        kind = given["type"]
        if "participant" in given:
            self.avatar_events(given)  # its events are in the log; this restores the held keys
        else:
            self.change_keys(given)
        if entry.story is not None:
            self.story_state = entry.story.copy()
        # As `apply` did: an outcome and a move to another beat disarm the waiting hook before the new beat's fire.
        moved = entry.story is not None and kind in ("choice", "own_choice") and not self.live
        if moved or (kind == "hook_outcome" and given.get("hook") == self.active_hook):
            self.active_hook = None
        for hook in entry.hooks:
            self.hook_fire(hook)
        if kind == "choice" and self.live:
            self.vote(given, tick, entry.sequence)
        if kind in ("pause", "resume"):
            self.paused = kind == "pause"
        self._reaction([])
        return list(entry.events)

    def stepped(self, tick: int, position: tuple[float, float] | None) -> Reaction:
        """The session stepped to `tick` (standing at `position`, when it has a picture): a vote that is due
        closes, and the area hooks the player walked into fire."""
        outgoing: list[WorkerReply] = []
        if self.vote_closes_at is not None and tick >= self.vote_closes_at:
            outgoing += self.vote_close(tick)
        if position is not None:
            outgoing += self.hooks_fired_at(position)
        return self._reaction(outgoing)

    def refresh(self, viewer: str | None = None) -> list[WorkerReply]:
        """What a browser arriving at a running session needs to see at once: where the story stands, for
        that `viewer` alone when it is named."""
        return self.story_messages(viewer, retold=True) if self.story is not None else []

    def conversation_record(self, character: str, said: str, reply: str) -> None:
        """Keep a finished exchange for the next prompts."""
        turns = self.conversations.setdefault(character, [])
        turns += [{"role": "user", "content": said}, {"role": "assistant", "content": reply}]
        del turns[:-CONVERSATION_MESSAGES_KEPT]

    def _reaction(self, messages: list[WorkerReply]) -> Reaction:
        reaction = Reaction(messages=messages, jobs=self._jobs, snapshot_due=self._snapshot_due)
        self._jobs, self._snapshot_due = [], False
        return reaction

    # Inputs

    def change_keys(self, given: PlayerInput) -> None:
        key = given.get("key")
        if given["type"] == "key_down" and key in KEYS:
            self.held_keys.add(key)
        elif given["type"] == "key_up":
            self.held_keys.discard(key)

    def avatar_events(self, given: PlayerInput) -> list[WorldEvent]:
        """A Live participant's keys walk their avatar: it joins on their first key, then moves as they hold."""
        name = given["participant"]
        events: list[WorldEvent] = []
        if name not in self.participant_keys:
            self.participant_keys[name] = set()
            events.append({"kind": "join", "name": name})
        keys = self.participant_keys[name]
        if given["type"] == "key_down" and given.get("key") in KEYS:
            keys.add(given["key"])
        else:
            keys.discard(given.get("key"))
        events.append({"kind": "move", "name": name, "action": int(action_from_keys(keys))})
        return events

    def prompt(self, given: PlayerInput, tick: int) -> tuple[list[WorldEvent], list[WorkerReply]]:
        """A typed prompt: the response to a hook that waits for one; else world events when it asks for a change
        of the world ("a lantern appears"), told by what they change ("A lantern appears."); else a hook the words
        fire, presented; else the narrator's turn. A hook comes first: "I hand over my lantern" answers the
        guardian blocking the way, it does not conjure a lantern."""
        text = given["text"]
        if self.active_hook is not None:
            self._jobs.append(Job("hook", self.session, self.setting, {"hook": self.active_hook, "text": text}))
            return [], []
        events = self.world_prompts.events(text) if self.world_prompts is not None else events_from_prompt(text)
        if events:
            told = narration(events) or "The world changes."
            return events, [SessionNarration(session=self.session, text=told)]
        hooks_before = len(self.fired_hooks)
        outgoing = self.hooks_fired_by_text(given)
        if len(self.fired_hooks) == hooks_before:
            state = self.story_state
            # In a story, words typed at a beat may be the player's own choice: the narrator reads them.
            offered = state.offered if state is not None and not state.ended and not self.live else None
            self._jobs.append(
                Job(
                    "narrate",
                    self.session,
                    self.setting,
                    {
                        "text": text,
                        "beat": state.beat if state else None,
                        "offered": offered,
                        "unchanged": unchanged_reason(text),
                    },
                )
            )
        return [], outgoing

    def speech(self, given: PlayerInput, sequence: int) -> tuple[list[WorldEvent], list[WorkerReply]]:
        """Words to a character: they come over to the player (in a world that holds them), the reply is a job, and
        a hook the words fire is presented at once."""
        setting = self.setting
        if setting is None or given["character"] not in setting.cast:
            raise ValueError(f"there is no character called {given['character']!r} here")
        state = self.story_state
        self._jobs.append(
            Job(
                "reply",
                self.session,
                setting,
                {
                    "character": setting.cast[given["character"]],
                    "text": given["text"],
                    "sequence": sequence,
                    "speaker": given.get("participant"),
                    "history": list(self.conversations.get(given["character"], [])),
                    "beat": state.beat if state else None,
                    "flags": list(state.flags) if state else [],
                    "revealed_clues": list(state.revealed_clues) if state else [],
                },
            )
        )
        return [{"kind": "approach", "name": given["character"]}], self.hooks_fired_by_text(given)

    def offer(self, given: PlayerInput) -> list[WorkerReply]:
        """The choices written for a beat (logged, so a replay offers the same); stale when the story moved on."""
        state = self.story_state
        if self.story is None or state is None or state.beat != given["beat"] or state.offered is not None:
            return []
        state.offered = [{"text": str(choice["text"]), "to": str(choice["to"])} for choice in given["choices"]]
        return [self.choices_message()]

    def own_choice(self, given: PlayerInput, tick: int) -> list[WorkerReply]:
        """Words the player typed read as one of the offered choices: the story goes where that one leads."""
        if self.story is None or self.story_state is None or self.story_state.beat != given["beat"]:
            return []  # the story moved on meanwhile
        taken = SessionNarration(session=self.session, text=f"You choose: {given['text']}")
        self.story_state = self.story.choose(self.story_state, int(given["index"]))
        return [taken, *self.beat_entered(tick)]

    def hook_outcome(self, given: PlayerInput, tick: int) -> tuple[list[WorldEvent], list[WorkerReply]]:
        """Apply the branch a response was classified into (or the fallback's narration) to the session; stale when
        the hook no longer waits (the story moved on while the response was being classified)."""
        if given.get("hook") != self.active_hook:
            return [], []
        self.active_hook = None
        effects = given.get("effects") or {}
        outgoing: list[WorkerReply] = []
        told = effects.get("narration") or given.get("narration")
        if told:
            outgoing.append(SessionNarration(session=self.session, text=str(told)))
        state = self.story_state
        if state is not None:
            state.flags += [flag for flag in effects.get("set_flags", []) if flag not in state.flags]
            revealed = effects.get("reveal_clues", [])
            state.revealed_clues += [clue for clue in revealed if clue not in state.revealed_clues]
            if effects.get("move_to_beat") and self.story is not None:
                self.story_state = self.story.move(state, effects["move_to_beat"])
                outgoing += self.beat_entered(tick)
            else:
                outgoing += self.hooks_fired_by_story()
        return list(effects.get("world_events", [])), outgoing

    # Votes (Live worlds)

    def vote(self, given: PlayerInput, tick: int, sequence: int) -> list[WorkerReply]:
        """Record a Live participant's pick; the first vote opens a window, the majority is taken as it closes."""
        assert self.story is not None and self.story_state is not None
        options = self.story.choices(self.story_state)
        if not 0 <= given["index"] < len(options):
            return [SessionError(session=self.session, error=f"there is no choice {given['index']}", sequence=sequence)]
        self.votes[given.get("participant", "owner")] = given["index"]
        if self.vote_closes_at is None:
            self.vote_closes_at = tick + 1 + self.vote_window_ticks
        tally = [list(self.votes.values()).count(index) for index in range(len(options))]
        return [SessionVotes(session=self.session, tally=tally, closes_at_tick=self.vote_closes_at)]

    def vote_close(self, tick: int) -> list[WorkerReply]:
        """Take the choice most voted for (on a tie, the first of them) and move the story on."""
        assert self.story is not None and self.story_state is not None
        options = self.story.choices(self.story_state)
        tally = [list(self.votes.values()).count(index) for index in range(len(options))]
        chosen = tally.index(max(tally))
        self.votes, self.vote_closes_at = {}, None
        self.story_state = self.story.choose(self.story_state, chosen)
        self._snapshot_due = True
        announced = SessionNarration(session=self.session, text=f"The vote chose: {options[chosen]}")
        return [announced, *self.beat_entered(tick)]

    # Hooks

    def hook_fire(self, name: str) -> list[WorkerReply]:
        """The hook waits for the player's response; the world presents it."""
        hook = self.setting.hook(name) if self.setting else None
        if hook is None or name in self.fired_hooks:
            return []
        self.fired_hooks.append(name)
        self.active_hook = name
        if not hook.presentation:
            return []
        return [SessionNarration(session=self.session, text=hook.presentation)]

    def hooks_fired_by_story(self) -> list[WorkerReply]:
        """Fire the hooks that the story's beat or flags now meet."""
        if self.setting is None or self.story_state is None:
            return []
        state = self.story_state
        fired: list[HookRule] = [
            *self.setting.hooks_fired_by_beat(state.beat),
            *self.setting.hooks_fired_by_flags(state.flags),
        ]
        return [message for hook in fired for message in self.hook_fire(hook.name)]

    def hooks_fired_by_text(self, given: PlayerInput) -> list[WorkerReply]:
        """Fire the first unfired keyword or intent hook the text meets. The text only presents it: "I walk up to
        the door" is no response to the door, the player's next prompt is."""
        setting = self.setting
        if setting is None:
            return []
        candidates = [hook for hook in setting.hooks if hook.name not in self.fired_hooks]
        if not any(hook.trigger in ("keywords", "intent") for hook in candidates):
            return []
        similarity = self.intent_similarities(setting, given["text"])
        for hook in candidates:
            if hook.fired_by_text(given["text"], similarity.get(hook.name)):
                return self.hook_fire(hook.name)
        return []

    def hooks_fired_at(self, position: tuple[float, float]) -> list[WorkerReply]:
        """Fire the area hooks whose circle the player has walked into (deterministic, so replays agree)."""
        if self.setting is None:
            return []
        outgoing: list[WorkerReply] = []
        for hook in self.setting.hooks:
            if hook.name not in self.fired_hooks and hook.fired_at(position):
                outgoing += self.hook_fire(hook.name)
                self._snapshot_due = True
        return outgoing

    def intent_similarities(self, setting: Setting, text: str) -> dict[str, float]:
        """Each intent hook's cosine to `text` (empty without an embedder)."""
        if self.embedder is None or setting.intent_embeddings is None:
            return {}
        query = self.embedder.embed([text])[0]  # (D,)
        cosines = setting.intent_embeddings @ query  # (H,)
        return {hook.name: float(cosine) for hook, cosine in zip(setting.intent_hooks, cosines, strict=True)}

    # The story

    def beat_entered(self, tick: int) -> list[WorkerReply]:
        """The story reached a beat: show its scene, have its choices written, fire the hooks waiting there.

        A hook still waiting from the beat left behind is disarmed, and a vote still open there is dropped: the
        story moved on without them (the votes counted that beat's choices)."""
        assert self.story is not None and self.story_state is not None
        self.active_hook = None
        self.votes, self.vote_closes_at = {}, None
        self.offer_request(tick)
        return self.story_messages() + self.hooks_fired_by_story()

    def offer_request(self, tick: int) -> None:
        assert self.story is not None and self.story_state is not None
        state = self.story_state
        if state.ended or state.offered is not None:
            return
        self._jobs.append(
            Job(
                "offer",
                self.session,
                self.setting,
                {
                    "beat": state.beat,
                    "scene": self.story.scene(state),
                    "guidance": self.story.guidance(state),
                    "authored": self.story.authored(state),
                    # Repeatable per visit: the same beat reached again gets its choices written afresh.
                    "seed": hash_seed(self.session, state.beat, tick),
                },
            )
        )

    def story_messages(self, viewer: str | None = None, *, retold: bool = False) -> list[WorkerReply]:
        """Where the story stands: the beat's scene (`retold` when it was told before) and its choices, none while
        they are being written (the player then says that the story is thinking, however the beat was reached)."""
        assert self.story is not None and self.story_state is not None
        scene = SessionNarration(
            session=self.session, text=self.story.scene(self.story_state), viewer=viewer, retold=retold
        )
        return [scene, self.choices_message(viewer)]

    def choices_message(self, viewer: str | None = None) -> SessionChoices:
        assert self.story is not None and self.story_state is not None
        state = self.story_state
        return SessionChoices(
            session=self.session, beat=state.beat, choices=self.story.choices(state), ended=state.ended, viewer=viewer
        )


def hash_seed(*parts: Any) -> int:
    """A seed that is the same in every process for the same parts (Python's own hash of a str is not)."""
    return zlib.crc32("|".join(map(str, parts)).encode())
