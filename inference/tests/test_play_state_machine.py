"""A session's story, hooks, votes and held keys (PlayStateMachine): inputs and ticks in, messages and jobs out."""

from __future__ import annotations

from typing import Any

from inference.narrative.setting import Setting
from inference.play.state_machine import PlayStateMachine, Reaction
from inference.play.story import StoryGraph, StoryState
from inference.protocol import (
    NarrativeState,
    PlayerInput,
    SessionApplied,
    SessionChoices,
    SessionError,
    SessionNarration,
    SessionVotes,
)
from inference.world.state import action_from_keys

SESSION = "s"
STORY = {
    "title": "Two doors",
    "start_beat": "hall",
    "beats": [
        {"name": "hall", "scene": "A hall with two doors.", "choices": [{"text": "Left", "to": "corridor"},
                                                                        {"text": "Right", "to": "wall"}]},
        {"name": "corridor", "scene": "A long corridor.", "choices": [{"text": "Onward", "to": "treasure"}]},
        {"name": "wall", "scene": "A wall.", "choices": []},
        {"name": "treasure", "scene": "Treasure.", "choices": []},
    ],
}  # fmt: skip
GATE_HOOK = {"name": "the-gate", "trigger": "beat", "trigger_value": {"beat": "hall"},
             "presentation": "A gate creaks shut.",
             "branches": [{"name": "push", "intent": "push the gate"}]}  # fmt: skip
DOOR_HOOK = {"name": "the-door", "trigger": "keywords", "trigger_value": {"keywords": ["door"]},
             "presentation": "The door is locked.",
             "branches": [{"name": "kick", "intent": "kick the door"}]}  # fmt: skip
YARD_HOOK = {"name": "the-yard", "trigger": "flag", "trigger_value": {"flag": "gate-open"},
             "presentation": "A dog barks in the yard.",
             "branches": [{"name": "pet", "intent": "pet the dog"}]}  # fmt: skip
WELL_HOOK = {"name": "the-well", "trigger": "area", "trigger_value": {"x": 3, "y": 4, "radius": 1},
             "presentation": "Something glints down the well.",
             "branches": [{"name": "look", "intent": "look"}]}  # fmt: skip


def machine(
    *, story: dict[str, Any] | None = STORY, hooks: list[dict[str, Any]] | None = None, **options: Any
) -> PlayStateMachine:
    """A fresh session's state machine with `story` and a setting with `hooks` (none: no setting)."""
    setting = Setting.from_message({"title": "Doors", "characters": [], "hooks": hooks}) if hooks else None
    return PlayStateMachine(
        SESSION,
        narrative=NarrativeState(),
        setting=setting,
        story=StoryGraph(story) if story is not None else None,
        **options,
    )


def offer_of(reaction: Reaction) -> PlayerInput:
    """What the narrator proposes without a model for the reaction's one offer job: the beat's authored choices."""
    (job,) = [job for job in reaction.jobs if job.kind == "offer"]
    choices = [{"text": choice["text"], "to": choice["to"]} for choice in job.data["authored"]]
    return {"type": "offer", "beat": job.data["beat"], "choices": choices, "source": "authored"}


def begun(**fields: Any) -> PlayStateMachine:
    """A machine whose story began at tick 0 and whose first beat's choices were written (input 1)."""
    play = machine(**fields)
    beginning = play.begin(0)
    play.apply(1, offer_of(play.opened(0, arriving=beginning)), 0)
    return play


def applied(reaction: Reaction) -> SessionApplied:
    (report,) = [message for message in reaction.messages if isinstance(message, SessionApplied)]
    return report


def test_keys_held_and_released_become_the_held_keys() -> None:
    play = machine(story=None)
    first = play.apply(1, {"type": "key_down", "key": "KeyW"}, 0)
    assert first.messages == [SessionApplied(session=SESSION, sequence=1, tick=1, events=[])]
    assert first.events == [] and first.jobs == []
    play.apply(2, {"type": "key_down", "key": "ArrowLeft"}, 1)
    play.apply(3, {"type": "key_down", "key": "KeyQ"}, 2)  # no key of a world
    assert play.held_keys == {"KeyW", "ArrowLeft"}
    play.apply(4, {"type": "key_up", "key": "KeyW"}, 3)
    play.apply(5, {"type": "key_up", "key": "KeyS"}, 4)  # released without being held
    assert play.held_keys == {"ArrowLeft"}
    assert play.narrative().held_keys == ["ArrowLeft"]


def test_a_participants_keys_walk_their_avatar_and_leave_the_owners_keys_alone() -> None:
    play = machine(story=None, live=True)
    joined = play.apply(1, {"type": "key_down", "key": "KeyW", "participant": "ana"}, 0)
    walking = int(action_from_keys({"KeyW"}))
    assert joined.events == [{"kind": "join", "name": "ana"}, {"kind": "move", "name": "ana", "action": walking}]
    assert applied(joined).events == joined.events
    stopped = play.apply(2, {"type": "key_up", "key": "KeyW", "participant": "ana"}, 1)
    assert stopped.events == [{"kind": "move", "name": "ana", "action": int(action_from_keys(set()))}]
    assert play.held_keys == set()
    assert play.narrative().participant_keys == {"ana": []}


def test_a_story_begins_at_its_first_beat_and_asks_for_that_beats_choices() -> None:
    play = machine()
    beginning = play.begin(0)
    assert beginning == [
        SessionNarration(session=SESSION, text="A hall with two doors."),
        SessionChoices(session=SESSION, beat="hall", choices=[], ended=False),  # being written
    ]
    assert play.begin(0) == []  # a story begins once
    opened = play.opened(0, arriving=beginning)
    assert opened.messages == beginning
    (job,) = opened.jobs
    assert (job.kind, job.data["beat"]) == ("offer", "hall")
    assert job.data["authored"] == [
        {"text": "Left", "to": "corridor", "leads_to": "A long corridor."},
        {"text": "Right", "to": "wall", "leads_to": "A wall."},
    ]


def test_the_written_choices_are_offered_and_reported_in_the_story_state() -> None:
    play = machine()
    beginning = play.begin(0)
    offer = offer_of(play.opened(0, arriving=beginning))
    reaction = play.apply(1, offer, 0)
    assert applied(reaction).story == StoryState(beat="hall", offered=offer["choices"])
    assert reaction.messages[-1] == SessionChoices(session=SESSION, beat="hall", choices=["Left", "Right"], ended=False)
    assert reaction.snapshot_due
    again = play.apply(2, {**offer, "choices": [{"text": "Back", "to": "hall"}]}, 1)  # written once per visit
    assert again.messages == [SessionApplied(session=SESSION, sequence=2, tick=2, events=[])]


def test_a_story_choice_moves_to_the_chosen_beat_and_reports_the_story_state() -> None:
    play = begun()
    chosen = play.apply(2, {"type": "choice", "index": 0}, 4)
    assert chosen.messages == [
        SessionApplied(session=SESSION, sequence=2, tick=5, events=[], story=StoryState(beat="corridor")),
        SessionNarration(session=SESSION, text="A long corridor."),
        SessionChoices(session=SESSION, beat="corridor", choices=[], ended=False),
    ]
    assert chosen.snapshot_due
    ((kind, beat),) = [(job.kind, job.data["beat"]) for job in chosen.jobs]
    assert (kind, beat) == ("offer", "corridor")
    assert play.narrative().story == StoryState(beat="corridor")


def test_a_choice_that_is_not_on_offer_is_an_error_at_its_sequence_and_moves_nothing() -> None:
    play = begun()
    refused = play.apply(2, {"type": "choice", "index": 5}, 1)
    assert refused.messages == [
        SessionApplied(session=SESSION, sequence=2, tick=2, events=[]),
        SessionError(session=SESSION, error="beat 'hall' has no choice 5", sequence=2),
    ]
    assert play.story_state is not None and play.story_state.beat == "hall"


def test_a_choice_that_leads_to_an_ending_ends_the_story_and_a_later_choice_is_refused() -> None:
    play = begun()
    ending = play.apply(2, {"type": "choice", "index": 1}, 1)
    assert applied(ending).story == StoryState(beat="wall", ended=True)
    assert ending.messages[1:] == [
        SessionNarration(session=SESSION, text="A wall."),
        SessionChoices(session=SESSION, beat="wall", choices=[], ended=True),
    ]
    assert ending.jobs == []  # an ending has no choices to write
    after = play.apply(3, {"type": "choice", "index": 0}, 2)
    assert after.messages[-1] == SessionError(session=SESSION, error="beat 'wall' has no choice 0", sequence=3)
    assert applied(after).story is None
    assert play.story_state == StoryState(beat="wall", ended=True)


def test_a_story_that_starts_at_an_ending_has_ended_from_the_start() -> None:
    play = machine(story={"start_beat": "wall", "beats": [{"name": "wall", "scene": "A wall."}]})
    beginning = play.begin(0)
    assert beginning[-1] == SessionChoices(session=SESSION, beat="wall", choices=[], ended=True)
    assert play.opened(0, arriving=beginning).jobs == []


def votes_of(reaction: Reaction) -> SessionVotes:
    (votes,) = [message for message in reaction.messages if isinstance(message, SessionVotes)]
    return votes


def test_a_live_worlds_vote_tallies_each_voters_last_pick_and_closes_at_its_tick_on_the_majority() -> None:
    play = begun(live=True, vote_window_ticks=5)
    first = play.apply(2, {"type": "choice", "index": 0}, 10)
    assert votes_of(first) == SessionVotes(session=SESSION, tally=[1, 0], closes_at_tick=16)
    assert applied(first).story is None  # a vote moves nothing yet
    play.apply(3, {"type": "choice", "index": 1, "participant": "ana"}, 11)
    play.apply(4, {"type": "choice", "index": 0, "participant": "bo"}, 12)
    changed = play.apply(5, {"type": "choice", "index": 1, "participant": "bo"}, 13)
    assert votes_of(changed) == SessionVotes(session=SESSION, tally=[1, 2], closes_at_tick=16)
    assert play.stepped(15, None).messages == []
    assert play.story_state is not None and play.story_state.beat == "hall"
    closed = play.stepped(16, None)
    assert closed.messages == [
        SessionNarration(session=SESSION, text="The vote chose: Right"),
        SessionNarration(session=SESSION, text="A wall."),
        SessionChoices(session=SESSION, beat="wall", choices=[], ended=True),
    ]
    assert closed.snapshot_due
    assert play.story_state == StoryState(beat="wall", ended=True)
    assert (play.votes, play.vote_closes_at) == ({}, None)


def test_a_tied_vote_takes_the_first_of_the_tied_choices() -> None:
    play = begun(live=True, vote_window_ticks=5)
    play.apply(2, {"type": "choice", "index": 1}, 0)
    play.apply(3, {"type": "choice", "index": 0, "participant": "ana"}, 0)
    closed = play.stepped(6, None)
    assert closed.messages[0] == SessionNarration(session=SESSION, text="The vote chose: Left")
    assert play.story_state is not None and play.story_state.beat == "corridor"


def test_a_vote_for_a_choice_not_on_offer_is_an_error_at_its_sequence_and_opens_no_vote() -> None:
    play = begun(live=True, vote_window_ticks=5)
    refused = play.apply(2, {"type": "choice", "index": 7, "participant": "ana"}, 0)
    assert refused.messages[-1] == SessionError(session=SESSION, error="there is no choice 7", sequence=2)
    assert (play.votes, play.vote_closes_at) == ({}, None)


def test_a_vote_still_open_when_a_hook_moves_the_story_on_closes_without_failing_the_session() -> None:
    play = begun(live=True, vote_window_ticks=5, hooks=[GATE_HOOK])
    play.apply(2, {"type": "choice", "index": 0}, 0)
    moved = {"type": "hook_outcome", "hook": "the-gate", "branch": "push", "effects": {"move_to_beat": "wall"}}
    assert applied(play.apply(3, moved, 1)).story == StoryState(beat="wall", ended=True)
    closing = play.stepped(6, None)  # the vote opened at the hall closes at the wall
    assert not any(
        isinstance(message, SessionNarration) and message.text.startswith("The vote chose")
        for message in closing.messages
    )
    assert play.story_state == StoryState(beat="wall", ended=True)
    assert play.vote_closes_at is None


def test_a_hook_waiting_at_the_first_beat_fires_as_the_story_begins() -> None:
    play = machine(hooks=[GATE_HOOK])
    assert play.begin(0)[-1] == SessionNarration(session=SESSION, text="A gate creaks shut.")
    assert (play.active_hook, play.fired_hooks) == ("the-gate", ["the-gate"])


def test_the_line_that_fires_a_keyword_hook_presents_it_and_the_next_line_is_its_response() -> None:
    play = machine(story=None, hooks=[DOOR_HOOK])
    fired = play.apply(1, {"type": "prompt", "text": "I walk up to the door"}, 0)
    assert fired.messages == [
        SessionApplied(session=SESSION, sequence=1, tick=1, events=[], hooks=["the-door"]),
        SessionNarration(session=SESSION, text="The door is locked."),
    ]
    assert fired.jobs == []  # the line that fires it is no response to it
    response = play.apply(2, {"type": "prompt", "text": "I kick the door hard"}, 1)
    assert applied(response).hooks == []  # a hook fires once
    ((kind, data),) = [(job.kind, job.data) for job in response.jobs]
    assert (kind, data) == ("hook", {"hook": "the-door", "text": "I kick the door hard"})


def test_a_hook_outcome_that_sets_a_flag_fires_the_hook_waiting_for_that_flag() -> None:
    play = begun(hooks=[GATE_HOOK, YARD_HOOK])
    outcome = {
        "type": "hook_outcome",
        "hook": "the-gate",
        "branch": "push",
        "effects": {"set_flags": ["gate-open"], "narration": "The gate gives way."},
    }
    reaction = play.apply(2, outcome, 3)
    report = applied(reaction)
    assert report.hooks == ["the-yard"]
    assert report.story is not None and report.story.flags == ["gate-open"]
    assert reaction.messages[1:] == [
        SessionNarration(session=SESSION, text="The gate gives way."),
        SessionNarration(session=SESSION, text="A dog barks in the yard."),
    ]
    assert play.active_hook == "the-yard"


def test_a_hook_fires_once_when_the_player_walks_into_its_area() -> None:
    play = machine(story=None, hooks=[WELL_HOOK])
    assert play.stepped(1, (0.0, 0.0)).messages == []
    walked_in = play.stepped(2, (3.5, 4.0))
    assert walked_in.messages == [SessionNarration(session=SESSION, text="Something glints down the well.")]
    assert walked_in.snapshot_due
    assert play.active_hook == "the-well"
    assert play.stepped(3, (3.0, 4.0)).messages == []


def test_a_beat_change_disarms_the_waiting_hook_and_later_words_are_read_afresh() -> None:
    play = begun(hooks=[GATE_HOOK])
    assert play.active_hook == "the-gate"
    play.apply(2, {"type": "choice", "index": 0}, 1)
    assert play.active_hook is None
    night = play.apply(3, {"type": "prompt", "text": "make it night"}, 2)
    assert night.events == [{"kind": "night"}]
    assert night.jobs == []
    # The gate's outcome, classified while the player chose, comes too late and changes nothing.
    late = {"type": "hook_outcome", "hook": "the-gate", "branch": "push", "effects": {"set_flags": ["pushed"]}}
    assert play.apply(4, late, 3).messages == [SessionApplied(session=SESSION, sequence=4, tick=4, events=[])]
    assert play.story_state is not None and play.story_state.flags == []


def test_pause_and_resume_set_whether_the_session_is_paused() -> None:
    play = machine(story=None)
    paused = play.apply(1, {"type": "pause"}, 0)
    assert paused.messages == [SessionApplied(session=SESSION, sequence=1, tick=1, events=[])]
    assert play.paused and play.narrative().paused
    play.apply(2, {"type": "resume"}, 1)
    assert not play.paused and not play.narrative().paused


def test_an_input_of_a_kind_this_worker_does_not_know_is_an_error_at_its_sequence() -> None:
    play = machine()
    play.begin(0)
    refused = play.apply(7, {"type": "dance"}, 3)
    assert refused.messages == [
        SessionApplied(session=SESSION, sequence=7, tick=4, events=[]),
        SessionError(session=SESSION, error="this worker cannot handle 'dance' inputs", sequence=7),
    ]
    assert refused.jobs == [] and refused.events == []


def test_words_to_a_character_that_is_not_here_are_an_error_at_their_sequence() -> None:
    play = machine(story=None, hooks=[DOOR_HOOK])
    refused = play.apply(3, {"type": "speech", "character": "Nobody", "text": "hello"}, 0)
    assert refused.messages[-1] == SessionError(
        session=SESSION, error="there is no character called 'Nobody' here", sequence=3
    )
    assert refused.jobs == []


def test_the_narrative_state_restores_into_a_machine_in_the_same_state() -> None:
    play = begun(hooks=[GATE_HOOK], live=True, vote_window_ticks=5)
    play.apply(2, {"type": "key_down", "key": "KeyW"}, 0)
    play.apply(3, {"type": "choice", "index": 1, "participant": "ana"}, 0)
    play.apply(4, {"type": "pause"}, 0)
    kept = play.narrative()
    restored = PlayStateMachine(SESSION, narrative=kept, story=StoryGraph(STORY), live=True)
    assert restored.narrative() == kept
    assert (restored.held_keys, restored.votes, restored.vote_closes_at) == ({"KeyW"}, {"ana": 1}, 6)
    assert (restored.active_hook, restored.paused) == ("the-gate", True)
    restored.held_keys.add("KeyD")
    assert kept.held_keys == ["KeyW"]  # what was kept does not change with the machine


def test_words_to_a_character_call_them_over_and_queue_their_reply() -> None:
    eve = {"name": "Eve", "persona": "The lighthouse keeper."}
    play = PlayStateMachine(
        SESSION, narrative=NarrativeState(), setting=Setting.from_message({"title": "Isle", "characters": [eve]})
    )
    spoken = play.apply(4, {"type": "speech", "character": "Eve", "text": "Hello"}, 9)
    approach = [{"kind": "approach", "name": "Eve"}]
    assert spoken.events == approach
    assert spoken.messages == [SessionApplied(session=SESSION, sequence=4, tick=10, events=approach)]
    assert [job.kind for job in spoken.jobs] == ["reply"]
