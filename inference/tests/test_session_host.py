"""The session host: batched stepping, exact replay after a failover, exactly-once inputs, prompts, stories."""

from __future__ import annotations

from typing import Any

import pytest

from inference.engine import RaycastEngine
from inference.play.host import HostConfig, SessionHost
from inference.play.prompts import events_from_prompt, unchanged_reason
from inference.protocol import (
    PendingInput,
    PlayerInput,
    ReplayedInput,
    SessionApplied,
    SessionChoices,
    SessionError,
    SessionMissing,
    SessionNarration,
    SessionOpen,
    SessionVotes,
    WorkerToPlatform,
)
from inference.tests.platform_log import replayed_input, snapshot_kept
from inference.world.state import from_snapshot

SPEC = {"seed": 11, "size": 12}
STORY = {
    "title": "Two doors",
    "start_beat": "hall",
    "beats": [
        {"name": "hall", "scene": "A hall with two doors.", "choices": [{"text": "Left", "to": "left"},
                                                                        {"text": "Right", "to": "right"}]},
        {"name": "left", "scene": "Treasure.", "choices": []},
        {"name": "right", "scene": "A wall.", "choices": []},
    ],
}  # fmt: skip


def host() -> SessionHost:
    return SessionHost({"raycaster": RaycastEngine(width=32, height=32)})


def session_open(session: str, **fields: Any) -> SessionOpen:
    """A `session.open` of the raycaster world SPEC; `fields` give the rest (story, replay, snapshot, ...)."""
    return SessionOpen(session=session, engine="raycaster", spec=SPEC, **fields)


def world_state(session_host: SessionHost, session: str) -> Any:
    hosted = session_host.sessions[session]
    return from_snapshot(hosted.engine.snapshot(hosted.id))


def test_all_sessions_step_as_one_batch_and_frames_number_by_tick() -> None:
    session_host = host()
    for name in ("a", "b", "c"):
        session_host.open(session_open(name))
    frames, _ = session_host.tick()
    frames, _ = session_host.tick()
    assert sorted(frame.session for frame, _ in frames) == ["a", "b", "c"]
    assert {frame.number for frame, _ in frames} == {2}


def test_a_reopened_session_replays_its_log_to_the_same_state_without_repeating_inputs() -> None:
    live = host()
    live.open(session_open("s"))
    logged: list[ReplayedInput] = []
    script = {
        2: ("key_down", "KeyW"),
        9: ("key_down", "ArrowLeft"),
        14: ("key_up", "KeyW"),
        20: ("prompt", "make it night"),
        23: ("key_up", "ArrowLeft"),
        27: ("key_down", "KeyD"),
    }
    snapshot = None
    sequence = 0
    for tick in range(1, 35):
        if tick in script:
            kind, value = script[tick]
            sequence += 1
            given = {"type": kind, "key": value} if kind.startswith("key") else {"type": kind, "text": value}
            logged.append(replayed_input(given, live.input("s", sequence, given)))
        live.tick()
        if tick == 12:
            snapshot = snapshot_kept(live.snapshot("s"))
    # The platform saw frames up to tick 34; the worker died; another reopens the session.
    pending_input = {"type": "key_up", "key": "KeyD"}
    reopened = host()
    pending = [PendingInput(sequence=sequence + 1, input=pending_input)]
    reopened.open(session_open("s", snapshot=snapshot, replay=logged, target_tick=34, pending=pending))
    live.input("s", sequence + 1, pending_input)
    assert world_state(reopened, "s") == world_state(live, "s")
    assert world_state(reopened, "s").time_of_day == "night"
    assert reopened.input("s", 3, {"type": "key_down", "key": "KeyW"}) == []  # already applied
    reopened.tick()
    live.tick()
    assert world_state(reopened, "s") == world_state(live, "s")


def test_a_prompt_becomes_world_events_and_is_reported_with_its_tick() -> None:
    session_host = host()
    session_host.open(session_open("s"))
    session_host.tick()
    applied = session_host.input("s", 1, {"type": "prompt", "text": "It starts snowing"})[0]
    assert applied == SessionApplied(session="s", sequence=1, tick=2, events=[{"kind": "snow"}])
    session_host.tick()
    assert world_state(session_host, "s").weather == "snow"


def test_prompts_map_onto_the_events_vocabulary() -> None:
    assert events_from_prompt("make it night") == [{"kind": "night"}]
    assert events_from_prompt("a red tower appears ahead") == [
        {"kind": "spawn", "object": "tower", "color": [200, 40, 40]}
    ]
    assert events_from_prompt("stop the rain") == [{"kind": "clear", "object": "rain"}]
    assert events_from_prompt("tell me a joke") == []
    assert events_from_prompt("no more snow, please") == [{"kind": "clear", "object": "snow"}]
    assert events_from_prompt("enough of this darkness") == [{"kind": "day"}]
    assert events_from_prompt("is it going to rain?") == []
    assert events_from_prompt("tell me about the crystals") == []


@pytest.mark.parametrize(
    ("prompt", "reason"),
    [
        ("make the sky purple", "that is not a change this world knows"),
        ("Please turn everything to gold", "that is not a change this world knows"),
        ("no more dawn", "what you asked to end stays"),
        ("make the tower disappear", "what you asked to end stays"),
    ],
)
def test_a_prompt_asking_for_a_change_no_event_makes_is_told_that_nothing_changed_and_why(
    prompt: str, reason: str
) -> None:
    session_host = host()
    session_host.open(session_open("s"))
    applied = session_host.input("s", 1, {"type": "prompt", "text": prompt})
    (job,) = session_host.take_jobs()
    assert applied[0].events == [] and job.kind == "narrate"
    assert job.data["unchanged"].startswith(f"Nothing changed: {reason}")
    assert "day, dawn or night" in job.data["unchanged"]


@pytest.mark.parametrize(
    "prompt",
    [
        "turn left",
        "I walk to the door",
        "what is this place?",
        "tell me about the crystals",
        "I don't know",
        "I hope it doesn't snow before I get home",
        "hold off on the sunrise a little longer",
    ],
)
def test_an_action_or_a_question_goes_to_the_narrator_without_a_nothing_changed(prompt: str) -> None:
    assert unchanged_reason(prompt) is None


def offer_written(session_host: SessionHost, sequence: int) -> tuple[PlayerInput, list[WorkerToPlatform]]:
    """What the narrator does without a model: propose the beat's authored choices; returns the input and what
    the host answered to it (the platform logs the proposal and sends it back as the next input)."""
    (job,) = [job for job in session_host.take_jobs() if job.kind == "offer"]
    offer = {"type": "offer", "beat": job.data["beat"], "choices": job.data["authored"], "source": "authored"}
    return offer, session_host.input(job.session, sequence, offer)


def test_a_choice_moves_the_story_and_sends_the_next_scene() -> None:
    session_host = host()
    opened = session_host.open(session_open("s", story=STORY))
    assert opened[-2:] == [
        SessionNarration(session="s", text="A hall with two doors."),
        SessionChoices(session="s", beat="hall", choices=[], ended=False),  # being written
    ]
    _, offered = offer_written(session_host, 1)
    assert offered[-1] == SessionChoices(session="s", beat="hall", choices=["Left", "Right"], ended=False)
    assert offered[0].story.offered == [{"text": "Left", "to": "left"}, {"text": "Right", "to": "right"}]
    messages = session_host.input("s", 2, {"type": "choice", "index": 0})
    assert messages[0].story.beat == "left"
    assert SessionChoices(session="s", beat="left", choices=[], ended=True) in messages
    bad = session_host.input("s", 3, {"type": "choice", "index": 5})
    assert isinstance(bad[-1], SessionError)


def test_an_offer_for_a_beat_the_story_has_left_changes_nothing() -> None:
    session_host = host()
    session_host.open(session_open("s", story=STORY))
    offer_written(session_host, 1)
    session_host.input("s", 2, {"type": "choice", "index": 1})
    stale = {"type": "offer", "beat": "hall", "choices": [{"text": "Back", "to": "hall"}], "source": "generated"}
    assert session_host.input("s", 3, stale) == [SessionApplied(session="s", sequence=3, tick=1, events=[])]
    assert session_host.sessions["s"].play.story_state.beat == "right"


def test_a_paused_session_does_not_step() -> None:
    session_host = host()
    session_host.open(session_open("s"))
    session_host.input("s", 1, {"type": "pause"})
    frames, _ = session_host.tick()
    assert frames == []
    session_host.input("s", 2, {"type": "resume"})
    frames, _ = session_host.tick()
    assert [(frame.number, sequence) for frame, sequence in frames] == [(1, 2)]


def test_a_live_participant_walks_an_avatar_and_a_replay_restores_it() -> None:
    live = host()
    live.open(session_open("s"))
    logged = []
    for sequence, given in enumerate(
        [{"type": "key_down", "key": "KeyW", "participant": "ana"}, {"type": "key_down", "key": "KeyW"}], start=1
    ):
        logged.append(replayed_input(given, live.input("s", sequence, given)))
        live.tick()
    assert [event["kind"] for event in logged[0].events] == ["join", "move"]
    for _ in range(5):
        live.tick()
    avatar = world_state(live, "s").avatars[0]
    assert avatar.name == "ana"
    reopened = host()
    reopened.open(session_open("s", replay=logged, target_tick=live.sessions["s"].tick))
    assert world_state(reopened, "s") == world_state(live, "s")


def test_in_a_live_world_the_majority_vote_moves_the_story_when_the_vote_closes() -> None:
    session_host = SessionHost({"raycaster": RaycastEngine(width=16, height=16)}, HostConfig(vote_window_ticks=5))
    session_host.open(session_open("s", story=STORY, live=True))
    offer, offered = offer_written(session_host, 1)
    logged = [replayed_input(offer, offered)]
    votes = [
        ({"type": "choice", "index": 0}, 2),
        ({"type": "choice", "index": 1, "participant": "ana"}, 3),
        ({"type": "choice", "index": 1, "participant": "bo"}, 4),
    ]
    for given, sequence in votes:
        messages = session_host.input("s", sequence, given)
        logged.append(replayed_input(given, messages))
        assert isinstance(messages[1], SessionVotes)
    assert messages[1].tally == [1, 2]
    outcomes = []
    for _ in range(6):
        outcomes += session_host.tick()[1]
    assert SessionNarration(session="s", text="The vote chose: Right") in outcomes
    assert session_host.sessions["s"].play.story_state.beat == "right"
    reopened = SessionHost({"raycaster": RaycastEngine(width=16, height=16)}, HostConfig(vote_window_ticks=5))
    reopened.open(session_open("s", story=STORY, live=True, replay=logged, target_tick=6))
    assert reopened.sessions["s"].play.story_state.beat == "right"


def test_a_single_players_input_brings_the_tick_forward_and_a_live_worlds_keeps_its_rate() -> None:
    session_host = host()
    session_host.open(session_open("alone"))
    session_host.open(session_open("crowd", live=True))
    assert session_host.input_brings_tick_forward("alone")
    assert not session_host.input_brings_tick_forward("crowd")
    assert not session_host.input_brings_tick_forward("closed")


def key(name: str) -> dict[str, Any]:
    return {"type": "key_down", "key": name}


def missing_asked(session_host: SessionHost, ticks: int) -> list[SessionMissing]:
    """The session.missing messages the next `ticks` ticks send."""
    due = [message for _ in range(ticks) for message in session_host.tick()[1]]
    return [message for message in due if isinstance(message, SessionMissing)]


def test_an_overtaken_input_fills_the_gap_it_left_and_nothing_is_asked() -> None:
    session_host = host()
    session_host.open(session_open("s"))
    assert isinstance(session_host.input_forwarded("s", 1, key("KeyW"))[0], SessionApplied)
    assert session_host.input_forwarded("s", 3, key("KeyA")) == []  # waits for 2
    assert session_host.input_forwarded("s", 4, key("KeyD")) == []
    assert session_host.sessions["s"].play.held_keys == {"KeyW"}
    assert missing_asked(session_host, 1) == []  # a moment: 2 was overtaken, and comes now
    applied = [reply.sequence for reply in session_host.input_forwarded("s", 2, key("KeyS"))]
    assert applied == [2, 3, 4]
    assert session_host.sessions["s"].play.held_keys == {"KeyW", "KeyS", "KeyA", "KeyD"}
    assert missing_asked(session_host, 30) == []


def test_inputs_that_came_early_apply_after_the_reopen_fills_the_gap_from_the_log() -> None:
    session_host = host()
    session_host.open(session_open("s"))
    session_host.input_forwarded("s", 1, key("KeyW"))
    session_host.input_forwarded("s", 4, key("KeyD"))
    # The reopen's pending inputs: the lost one, and the early one, which is logged too.
    for sequence, given in ((2, key("KeyS")), (4, key("KeyD"))):
        session_host.input("s", sequence, given)
    assert session_host.early_inputs_apply("s") == []  # 4 came in the log; 3 was never logged
    assert session_host.sessions["s"].sequencer.applied == 4
    assert session_host.input_forwarded("s", 5, key("KeyA"))[0].sequence == 5


def test_a_lost_input_is_asked_for_two_ticks_on_and_again_while_no_reopen_comes() -> None:
    session_host = SessionHost(
        {"raycaster": RaycastEngine(width=16, height=16)}, HostConfig(missing_wait_ticks=2, missing_ask_again_ticks=3)
    )
    session_host.open(session_open("s"))
    assert session_host.input_forwarded("s", 2, key("KeyW")) == []  # 1 was lost
    assert missing_asked(session_host, 1) == []
    assert missing_asked(session_host, 1) == [SessionMissing(session="s", after=0)]
    # The reopen that answers is lost as well: three ticks on, the worker asks again, and again after three more.
    assert missing_asked(session_host, 2) == []
    assert len(missing_asked(session_host, 1)) == 1
    assert len(missing_asked(session_host, 3)) == 1
    session_host.input_forwarded("s", 1, key("KeyS"))
    assert session_host.sessions["s"].sequencer.applied == 2
    assert missing_asked(session_host, 6) == []


def test_a_prompt_that_changes_the_world_is_told_by_what_it_changes() -> None:
    session_host = host()
    session_host.open(session_open("s"))
    told = session_host.input("s", 1, {"type": "prompt", "text": "make it night and let it snow"})
    assert told[1] == SessionNarration(session="s", text="Night falls. Snow begins to fall.")


GATE_HOOK = {"name": "the-gate", "trigger": "beat", "trigger_value": {"beat": "hall"},
             "presentation": "A gate creaks shut.",
             "branches": [{"name": "push", "intent": "push the gate"}]}  # fmt: skip
DOOR_HOOK = {"name": "the-door", "trigger": "keywords", "trigger_value": {"keywords": ["door"]},
             "presentation": "The door is locked.",
             "branches": [{"name": "kick", "intent": "kick the door"}]}  # fmt: skip


def hooked_open(session: str, narrative: dict[str, Any] | None = None, **fields: Any) -> SessionOpen:
    """The story STORY opened with `narrative` (by default both hooks, the gate's waiting at the first beat)."""
    narrative = narrative or {"title": "Doors", "characters": [], "hooks": [GATE_HOOK, DOOR_HOOK]}
    return session_open(session, story=STORY, narrative=narrative, **fields)


def applied_and_logged(session_host: SessionHost, logged: list[ReplayedInput], given: PlayerInput) -> None:
    sequence = len(logged) + 1
    logged.append(replayed_input(given, session_host.input("s", sequence, given)))
    session_host.tick()


def test_the_line_that_fires_a_hook_presents_it_and_the_next_line_is_its_response() -> None:
    session_host = host()
    session_host.open(hooked_open("s", narrative={"title": "Doors", "characters": [], "hooks": [DOOR_HOOK]}))
    session_host.take_jobs()
    fired = session_host.input("s", 1, {"type": "prompt", "text": "I walk up to the door"})
    assert fired[0].hooks == ["the-door"] and fired[1] == SessionNarration(session="s", text="The door is locked.")
    assert session_host.take_jobs() == []
    session_host.input("s", 2, {"type": "prompt", "text": "I kick it hard"})
    (job,) = session_host.take_jobs()
    assert (job.kind, job.data) == ("hook", {"hook": "the-door", "text": "I kick it hard"})


def test_a_choice_disarms_the_waiting_hook_and_later_words_are_world_prompts_again_after_a_replay_too() -> None:
    live = host()
    live.open(hooked_open("s"))
    assert live.sessions["s"].play.active_hook == "the-gate"
    offer, offered = offer_written(live, 1)
    logged = [replayed_input(offer, offered)]
    applied_and_logged(live, logged, {"type": "choice", "index": 0})
    assert live.sessions["s"].play.active_hook is None
    applied_and_logged(live, logged, {"type": "prompt", "text": "make it night"})
    assert logged[-1].events == [{"kind": "night"}]
    live.take_jobs()
    # The outcome of the gate, classified while the player clicked on, comes too late and changes nothing.
    stale = {"type": "hook_outcome", "hook": "the-gate", "branch": "push", "effects": {"set_flags": ["pushed"]}}
    applied_and_logged(live, logged, stale)
    assert live.sessions["s"].play.story_state.flags == []
    reopened = host()
    reopened.open(hooked_open("s", replay=logged, target_tick=live.sessions["s"].tick))
    assert reopened.sessions["s"].play.narrative() == live.sessions["s"].play.narrative()


def test_a_hook_the_new_beat_fires_waits_for_its_response_after_a_replay_too() -> None:
    gate_in_left = {**GATE_HOOK, "trigger_value": {"beat": "left"}}
    narrative = {"title": "Doors", "characters": [], "hooks": [DOOR_HOOK, gate_in_left]}
    live = host()
    live.open(hooked_open("s", narrative=narrative))
    logged: list[ReplayedInput] = []
    applied_and_logged(live, logged, {"type": "prompt", "text": "a door"})  # the door waits at the hall
    offer, offered = offer_written(live, 2)
    logged.append(replayed_input(offer, offered))
    applied_and_logged(live, logged, {"type": "choice", "index": 0})
    assert logged[-1].hooks == ["the-gate"]
    assert live.sessions["s"].play.active_hook == "the-gate"
    reopened = host()
    reopened.open(hooked_open("s", narrative=narrative, replay=logged, target_tick=live.sessions["s"].tick))
    assert reopened.sessions["s"].play.narrative() == live.sessions["s"].play.narrative()
