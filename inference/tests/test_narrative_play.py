"""The narrative engine in play: hooks fire and branch, characters reply through the safety filter, choices
are offered, and what the model decided replays without asking it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

from inference import protocol
from inference.engine import RaycastEngine
from inference.language.embedding import HashedWordsEmbedder
from inference.language.local import LocalLanguageModel, LocalModelConfig
from inference.language.tiny import write_tiny_model
from inference.narrative.setting import Setting
from inference.play.host import CONVERSATION, Job, SessionHost
from inference.play.narrator import NOT_RECALLED, Narrator, NarratorConfig, in_capitals
from inference.protocol import (
    HookOutcome,
    Offer,
    OfferedChoice,
    OwnChoice,
    SessionBlocked,
    SessionCharacterLine,
    SessionDebugPrompt,
    SessionError,
    SessionExchange,
    SessionNarration,
    SessionOpen,
    SessionPropose,
    SessionSnapshot,
    WorkerToPlatform,
)
from inference.tests.platform_log import proposal_logged, replayed_input, snapshot_kept

Sent = TypeVar("Sent", bound=protocol.Message)

SPEC = {"seed": 11, "size": 12}
STORY = {
    "title": "The docks",
    "start_beat": "pier",
    "beats": [
        {"name": "pier", "scene": "Fog on the pier.", "goal": "Find the ship.",
         "choices": [{"text": "Board the ship", "to": "ship"}, {"text": "Ask the guard", "to": "guard"}]},
        {"name": "ship", "scene": "The deck creaks.", "choices": []},
        {"name": "guard", "scene": "The guard frowns.", "choices": []},
    ],
}  # fmt: skip
GUARD_HOOK = {
    "name": "the-guard",
    "trigger": "keywords",
    "trigger_value": {"keywords": ["guard"]},
    "presentation": "A guard blocks the gangway.",
    "fallback_enabled": False,
    "branches": [
        {"name": "bribe", "intent": "pay the guard money", "examples": ["give him coins", "bribe the guard with gold"],
         "effects": {"set_flags": ["bribed"], "world_events": [{"kind": "night"}], "move_to_beat": "ship",
                     "narration": "He pockets the coins."}},
        {"name": "fight", "intent": "attack the guard", "examples": ["punch him", "hit the guard with a stick"],
         "effects": {"set_flags": ["fought"]}},
    ],
}  # fmt: skip
AREA_HOOK = {"name": "the-well", "trigger": "area", "trigger_value": {"x": 0, "y": 0, "radius": 100},
             "presentation": "An old well.", "branches": []}  # fmt: skip
EVE = {"key": "character-0", "id": 7, "name": "Eve", "persona": "Eve keeps the harbour ledger.",
       "greeting": "Welcome to the docks.", "memory_scope": "player",
       "clues": [{"name": "ledger", "text": "The ledger names the Gull.", "condition": "keyword",
                  "condition_value": "ledger"}]}  # fmt: skip


def docks_narrative(**extra: Any) -> dict[str, Any]:
    return {
        "title": "Docks",
        "description": "A foggy harbour.",
        "content_rating": "everyone",
        "characters": [EVE],
        "hooks": [GUARD_HOOK],
        "safety": {"blocked": ["kill yourself"]},
    } | extra


def host() -> SessionHost:
    return SessionHost({"raycaster": RaycastEngine(width=16, height=16)}, embedder=HashedWordsEmbedder())


def session_open(
    *, engine: str = "raycaster", spec: dict[str, Any] = SPEC, narrative: dict[str, Any] | None = None, **fields: Any
) -> SessionOpen:
    """A `session.open` of session "s" in the docks (by default with Eve and the guard's hook); `fields` give the
    rest (story, snapshot, replay, ...)."""
    narrative = docks_narrative() if narrative is None else narrative
    return SessionOpen(session="s", engine=engine, spec=spec, narrative=narrative, **fields)


class RecordingLink:
    """The platform's side of a narrator, in memory: messages kept, recall answered from a fixed list."""

    def __init__(self, memories: list[str] | None = None) -> None:
        self.sent: list[WorkerToPlatform] = []
        self.memories = memories or []
        self.recorded: list[tuple[str, str, str, str]] = []

    def send(self, message: WorkerToPlatform) -> None:
        self.sent.append(message)

    def recall(
        self, *, session: str, character: int | None, speaker: str | None, query: bytes, recent: list[str]
    ) -> protocol.SessionRecalled | None:
        vector = np.frombuffer(query, dtype="<f4")
        assert vector.shape == (384,)
        return protocol.SessionRecalled(
            session=session, request=1, turn=3, memories=self.memories, lore=["The harbour closes at dusk."]
        )

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None:
        self.recorded.append((session, character, said, reply))

    def of_type(self, kind: type[Sent]) -> list[Sent]:
        return [message for message in self.sent if isinstance(message, kind)]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> LocalLanguageModel:
    return LocalLanguageModel(LocalModelConfig(model_dir=write_tiny_model(tmp_path_factory.mktemp("tiny"))))


def run_jobs(session_host: SessionHost, narrator: Narrator, link: RecordingLink) -> list[Job]:
    jobs = session_host.take_jobs()
    for job in jobs:
        narrator.run(job, link)
    return jobs


def test_a_keyword_fires_a_hook_and_the_branch_the_next_response_means_is_proposed_and_applied() -> None:
    session_host = host()
    session_host.open(session_open(story=STORY))
    session_host.take_jobs()
    fired = session_host.input("s", 1, {"type": "prompt", "text": "I walk up to the guard"})
    assert fired[0].hooks == ["the-guard"]
    assert SessionNarration(session="s", text="A guard blocks the gangway.") in fired
    assert session_host.take_jobs() == []  # the line that fired the hook only presents it
    session_host.input("s", 2, {"type": "prompt", "text": "I bribe the guard with gold coins"})
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), None), link)
    (proposal,) = link.of_type(SessionPropose)
    assert isinstance(proposal.input, HookOutcome) and proposal.input.branch == "bribe"
    applied = session_host.input("s", 3, proposal_logged(proposal))
    assert applied[0].events == [{"kind": "night"}]
    assert applied[0].story.beat == "ship" and applied[0].story.flags == ["bribed"]
    assert SessionNarration(session="s", text="He pockets the coins.") in applied
    assert session_host.sessions["s"].play.active_hook is None


def test_a_replay_restores_fired_hooks_and_branch_effects_without_the_model() -> None:
    live = host()
    live.open(session_open(story=STORY))
    live.take_jobs()
    logged = []
    for sequence, given in enumerate(
        [
            {"type": "prompt", "text": "the guard"},
            {
                "type": "hook_outcome",
                "hook": "the-guard",
                "branch": "fight",
                "effects": GUARD_HOOK["branches"][1]["effects"],
            },
        ],
        start=1,
    ):
        logged.append(replayed_input(given, live.input("s", sequence, given)))
        live.tick()
    reopened = host()
    reopened.open(session_open(story=STORY, replay=logged, target_tick=live.sessions["s"].tick))
    assert reopened.sessions["s"].play.narrative() == live.sessions["s"].play.narrative()
    assert reopened.sessions["s"].play.story_state.flags == ["fought"]
    assert [job.kind for job in reopened.take_jobs()] == ["offer"]  # choices still unwritten; nothing else redone


def test_walking_into_an_area_fires_its_hook_once() -> None:
    session_host = host()
    hooks = [{**AREA_HOOK, "trigger_value": {"x": 6, "y": 6, "radius": 50}}]
    session_host.open(session_open(narrative=docks_narrative(hooks=hooks)))
    _, due = session_host.tick()
    assert SessionNarration(session="s", text="An old well.") in due
    _, due = session_host.tick()
    assert not [message for message in due if isinstance(message, SessionNarration)]
    assert session_host.sessions["s"].play.fired_hooks == ["the-well"]


def test_speech_to_a_character_that_is_not_there_is_an_error() -> None:
    session_host = host()
    session_host.open(session_open())
    messages = session_host.input("s", 1, {"type": "speech", "character": "Bob", "text": "hi"})
    assert messages[-1] == SessionError(session="s", sequence=1, error="there is no character called 'Bob' here")


def test_a_character_replies_in_streamed_sentences_and_sends_back_what_the_player_told_it(
    tiny_model: LocalLanguageModel,
) -> None:
    session_host = host()
    session_host.open(session_open())
    said = "I found a silver key. What is in the ledger?"
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": said})
    link = RecordingLink(memories=["I lost my sister Mara."])
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: tiny_model), link)
    (debug,) = link.of_type(SessionDebugPrompt)
    assert debug.sections["lore"] == "- The harbour closes at dusk."
    assert "I lost my sister Mara." in debug.sections["memories"]
    assert debug.sections["clues"].endswith("- The ledger names the Gull.")  # the keyword was said
    lines = link.of_type(SessionCharacterLine)
    assert lines[-1].final is True and all(line.character == "Eve" for line in lines)
    assert "".join(line.text for line in lines[:-1]).strip()
    (exchange,) = link.of_type(SessionExchange)
    assert exchange.character == 7 and exchange.sequence == 1
    assert [memory.text for memory in exchange.memories] == ["I found a silver key."]
    assert link.recorded == [("s", "Eve", said, exchange.reply)]
    session_host.conversation_record(*link.recorded[0])
    assert session_host.sessions["s"].play.conversations["Eve"][0]["content"].startswith("I found")


def test_refused_text_is_never_streamed_and_is_reported(tiny_model: LocalLanguageModel) -> None:
    class Scripted:
        """A model that says one refused sentence, whatever it is asked."""

        def stream(self, messages: list[Any], settings: Any) -> Any:
            return iter(["Fine, I keep the harbour ledger. ", "You should kill yourself. ", "Bye."])

    session_host = host()
    session_host.open(session_open())
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": "hello there"})
    link = RecordingLink()
    # Replies of several sentences, so that the refused one comes after one that is shown.
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), Scripted, NarratorConfig(reply_sentences=3)), link)
    shown = [line.text for line in link.of_type(SessionCharacterLine) if line.text]
    assert shown == ["Fine, I keep the harbour ledger."]
    assert link.of_type(SessionBlocked)[0].terms == ["kill yourself"]


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (
            ["Fine, I keep the harbour ledger. ", "The gulls have eaten my hat. ", "Bye."],
            ["Fine, I keep the harbour ledger."],
        ),
        # An opening too short to judge alone keeps the sentence that makes it an answer.
        (
            ["Most evenings. ", "It rolls in off the causeway. ", "Bye."],
            ["Most evenings.", "It rolls in off the causeway."],
        ),
    ],
)
def test_a_reply_is_its_opening(pieces: list[str], expected: list[str]) -> None:
    class Scripted:
        def stream(self, messages: list[Any], settings: Any) -> Any:
            return iter(pieces)

    session_host = host()
    session_host.open(session_open())
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": "Is the harbour fog always this thick?"})
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), Scripted, NarratorConfig(min_topicality=0.0)), link)
    assert [line.text for line in link.of_type(SessionCharacterLine) if line.text] == expected
    (exchange,) = link.of_type(SessionExchange)
    assert exchange.reply == " ".join(expected)  # what is remembered is what was shown


def test_a_conversation_needs_no_world_engine_and_keeps_its_talk_in_snapshots() -> None:
    session_host = host()
    session_host.open(session_open(engine=CONVERSATION, spec={}))
    frames, due = session_host.tick()
    assert frames == [] and isinstance(due[0], SessionSnapshot) and due[0].engine_state == b""
    session_host.conversation_record("s", "Eve", "hello", "Welcome.")
    snapshot = snapshot_kept(session_host.snapshot("s"))
    reopened = host()
    reopened.open(session_open(engine=CONVERSATION, spec={}, snapshot=snapshot))
    assert reopened.sessions["s"].play.conversations == {
        "Eve": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "Welcome."}]
    }


def test_without_a_good_generated_pair_the_beat_offers_its_authored_choices(tiny_model: LocalLanguageModel) -> None:
    session_host = host()
    session_host.open(session_open(story=STORY))
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: tiny_model), link)
    (proposal,) = link.of_type(SessionPropose)
    authored = [OfferedChoice(text=choice["text"], to=choice["to"]) for choice in STORY["beats"][0]["choices"]]
    assert proposal.input == Offer(beat="pier", choices=authored, source="authored")


class RewritingModel:
    """Rewrites each authored choice by a script keyed on its verb, the seed of the reply."""

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    def stream(self, messages: list[Any], settings: Any) -> Any:
        yield self.replies[messages[-1]["content"]]

    def candidates(self, messages: list[Any], settings: Any, count: int) -> list[str]:
        return [self.replies[messages[-1]["content"]]] * count


def test_each_written_choice_leads_where_the_authored_choice_it_rewrites_leads() -> None:
    session_host = host()
    session_host.open(session_open(story=STORY))
    (offer_job,) = session_host.take_jobs()
    assert [choice["leads_to"] for choice in offer_job.data["authored"]] == ["The deck creaks.", "The guard frowns."]
    model = RewritingModel({"Board the": " creaking ship in the fog", "Ask the": " frowning guard about the fog"})
    link = RecordingLink()
    pauses: list[int] = []
    Narrator(HashedWordsEmbedder(), lambda: model, urgent_run=lambda: pauses.append(1)).run(offer_job, link)
    assert pauses == [1]  # where a reply that a player waits on may run, between the two choices
    (proposal,) = link.of_type(SessionPropose)
    written = [
        OfferedChoice(text="Board the creaking ship in the fog", to="ship"),
        OfferedChoice(text="Ask the frowning guard about the fog", to="guard"),
    ]
    assert proposal.input == Offer(beat="pier", choices=written, source="generated")


def test_a_written_choice_the_rating_refuses_gives_way_to_its_authored_text() -> None:
    session_host = host()
    session_host.open(session_open(story=STORY))
    (offer_job,) = session_host.take_jobs()
    model = RewritingModel({"Board the": " creaking ship in the fog", "Ask the": " guard to kill yourself"})
    link = RecordingLink()
    Narrator(HashedWordsEmbedder(), lambda: model).run(offer_job, link)
    (proposal,) = link.of_type(SessionPropose)
    assert isinstance(proposal.input, Offer)
    assert proposal.input.choices[1] == OfferedChoice(text="Ask the guard", to="guard")
    assert link.of_type(SessionBlocked)


def test_a_beats_choices_are_written_before_work_queued_earlier() -> None:
    ship = {"name": "ship", "scene": "The deck creaks.", "choices": [{"text": "Sail away", "to": "guard"}]}
    story = STORY | {"beats": [STORY["beats"][0], ship, STORY["beats"][2]]}
    session_host = host()
    session_host.open(session_open(story=story))
    session_host.take_jobs()
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": "hello"})
    session_host.input("s", 2, {"type": "offer", "beat": "pier", "choices": STORY["beats"][0]["choices"]})
    session_host.input("s", 3, {"type": "choice", "index": 0})
    assert [job.kind for job in session_host.take_jobs()] == ["offer", "reply"]


def test_a_worker_without_a_model_says_so_when_a_character_is_addressed() -> None:
    session_host = host()
    session_host.open(session_open())
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": "hello"})
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), None), link)
    assert link.of_type(SessionError)[0].error == "Eve cannot talk here: this worker runs no language model"


def test_a_tiny_model_directory_is_a_valid_worker_language_model(tmp_path: Path) -> None:
    from inference.worker import language_model_loader

    assert language_model_loader("none", "cpu") is None
    load = language_model_loader(str(write_tiny_model(tmp_path / "tiny")), "cpu")
    assert load is not None and hasattr(load(), "stream")


def test_words_typed_at_a_beat_that_read_as_an_offered_choice_take_it() -> None:
    from inference.language.embedding import default_embedder

    session_host = SessionHost({"raycaster": RaycastEngine(width=16, height=16)}, embedder=default_embedder())
    session_host.open(session_open(story=STORY, narrative=docks_narrative(hooks=[])))
    (offer_job,) = session_host.take_jobs()
    session_host.input("s", 1, {"type": "offer", "beat": "pier", "choices": offer_job.data["authored"]})
    session_host.input("s", 2, {"type": "prompt", "text": "I climb aboard the ship"})
    link = RecordingLink()
    run_jobs(session_host, Narrator(default_embedder(), None), link)
    (proposal,) = link.of_type(SessionPropose)
    assert proposal.input == OwnChoice(beat="pier", index=0, text="I climb aboard the ship")
    applied = session_host.input("s", 3, proposal_logged(proposal))
    assert applied[0].story.beat == "ship"
    assert SessionNarration(session="s", text="You choose: I climb aboard the ship") in applied


class Repeating:
    """A model that says the same words to every prompt, counting how often it was asked."""

    def __init__(self, *pieces: str) -> None:
        self.pieces = pieces
        self.asked = 0

    def stream(self, messages: list[Any], settings: Any) -> Any:
        self.asked += 1
        return iter(self.pieces)


def test_a_reply_about_something_else_is_resampled_then_replaced_by_the_creators_own_words() -> None:
    model = Repeating("Purple moon cars sing loudly over distant mountains tonight. ")
    session_host = host()
    session_host.open(session_open())
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": "welcome docks harbour"})
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: model), link)
    shown = [line.text for line in link.of_type(SessionCharacterLine) if line.text]
    assert model.asked == 3  # the first sample and two resamples
    assert shown == ["Welcome to the docks."]  # the creator's line closest to what the player said


class RepeatingWhileTheTalkIsShown:
    """A model that says its last reply again whenever the prompt holds the talk so far, and answers otherwise."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked_with_talk = self.asked_without = 0

    def stream(self, messages: list[Any], settings: Any) -> Any:
        earlier = [message["content"] for message in messages if message["role"] == "assistant"]
        if earlier:
            self.asked_with_talk += 1
            return iter([earlier[-1] + " "])
        self.asked_without += 1
        return iter([self.answer])


def test_a_reply_that_fails_with_the_talk_so_far_is_sampled_without_it_before_the_creator_s_line() -> None:
    model = RepeatingWhileTheTalkIsShown("The harbour lights go out at midnight, every night. ")
    narrator = Narrator(HashedWordsEmbedder(), lambda: model)
    setting = Setting.from_message(docks_narrative())
    said_before = "The harbour is quiet tonight, the boats all tied up."
    history = [{"role": "user", "content": "welcome docks harbour"}, {"role": "assistant", "content": said_before}]
    data = {"character": setting.cast["Eve"], "text": "when do the harbour lights go out", "sequence": 2}
    data |= {"speaker": None, "history": history, "beat": None, "flags": [], "revealed_clues": []}
    link = RecordingLink()
    narrator.reply(Job("reply", "s", setting, data), link)
    shown = [line.text for line in link.of_type(SessionCharacterLine) if line.text]
    assert (model.asked_with_talk, model.asked_without) == (3, 1)
    assert shown == ["The harbour lights go out at midnight, every night."]


def test_a_reply_written_in_lower_case_is_shown_with_its_capitals() -> None:
    model = Repeating("i'm sorry, i'd keep the harbour lights on all night if i could. ")
    session_host = host()
    session_host.open(session_open())
    asked = "do the harbour lights stay on all night"
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": asked})
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: model), link)
    shown = [line.text for line in link.of_type(SessionCharacterLine) if line.text]
    assert shown == ["I'm sorry, I'd keep the harbour lights on all night if I could."]
    assert link.recorded[-1][3] == shown[0]  # remembered as shown


@hypothesis.given(st.text(alphabet=st.sampled_from("iIaAbB.,'\"- !?éx"), max_size=40))
def test_capitals_change_only_the_case_of_letters_and_once_is_enough(sentence: str) -> None:
    tidied = in_capitals(sentence)
    assert tidied.lower() == sentence.lower()
    assert in_capitals(tidied) == tidied
    letters = [character for character in tidied if character.isalpha()]
    assert not letters or letters[0] == letters[0].upper()


def test_a_remembered_fact_is_stated_again_when_asked_again() -> None:
    model = Repeating("Keep it close. ")  # a remark about nothing the player asked
    session_host = host()
    session_host.open(session_open())
    link = RecordingLink(memories=["My brother is called Marco."])
    for sequence in (1, 2):
        session_host.input("s", sequence, {"type": "speech", "character": "Eve", "text": "What's my brother called?"})
        for job in session_host.take_jobs():
            Narrator(HashedWordsEmbedder(), lambda: model).run(job, link)
            session_host.conversation_record("s", "Eve", job.data["text"], link.recorded[-1][3])
    replies = [reply for *_, reply in link.recorded]
    # The answer is said again although the last reply said it; the model's "Keep it close." is about nothing
    # of this turn, so the answer stands alone.
    assert replies == ["Your brother is called Marco."] * 2


@hypothesis.given(
    name=st.sampled_from(["Tobiah", "Rosalind", "Ansel"]),
    told=st.sampled_from(["Good evening, Eve! My name is {}, and I mend clocks.", "Hello there. {}. I mend clocks."]),
)
@hypothesis.settings(max_examples=6, deadline=None)
def test_a_player_who_says_who_they_are_is_welcomed_by_that_name(name: str, told: str) -> None:
    model = Repeating("I keep the harbour ledger. ")  # what a small model answers an introduction with
    session_host = host()
    session_host.open(session_open())
    link = RecordingLink()
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": told.format(name)})
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: model), link)
    assert link.recorded[-1][3].startswith(f"Welcome, {name}.")


def test_the_grounded_answer_said_again_by_the_model_is_not_shown_twice() -> None:
    model = Repeating("Your brother is called Marco. ")  # the model copies the answer it was seeded with
    session_host = host()
    session_host.open(session_open())
    link = RecordingLink(memories=["My brother is called Marco."])
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": "What's my brother called?"})
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: model), link)
    assert [reply for *_, reply in link.recorded] == ["Your brother is called Marco."]


@pytest.mark.parametrize(
    ("written", "typed"),
    [
        ("I'm a digital audio workstation. ", "I sing a sea shanty to the gulls"),
        ("Is it going to rain? ", "is it going to rain?"),  # the player's words told back are no narration
    ],
)
def test_the_narrators_own_line_is_checked_like_a_characters(written: str, typed: str) -> None:
    model = Repeating(written)
    session_host = host()
    session_host.open(session_open())
    session_host.input("s", 1, {"type": "prompt", "text": typed})
    link = RecordingLink()
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: model), link)
    assert model.asked == 3
    assert [message.text for message in link.of_type(SessionNarration)] == ["Nothing in the world answers that yet."]


def test_a_creators_line_already_said_is_not_said_again_in_place_of_a_failed_reply() -> None:
    model = Repeating("Purple moon cars sing loudly over distant mountains tonight. ")
    narrator = Narrator(HashedWordsEmbedder(), lambda: model)
    setting = Setting.from_message(docks_narrative())
    member = setting.cast["Eve"]
    link = RecordingLink()
    history: list[dict[str, str]] = []
    for sequence in range(1, 6):
        data = {"character": member, "text": "welcome docks harbour", "sequence": sequence, "speaker": None}
        data |= {"history": list(history), "beat": None, "flags": [], "revealed_clues": []}
        before = len(link.sent)
        narrator.reply(Job("reply", "s", setting, data), link)
        reply = " ".join(m.text for m in link.sent[before:] if isinstance(m, SessionCharacterLine) and m.text)
        history += [{"role": "user", "content": "welcome docks harbour"}, {"role": "assistant", "content": reply}]
    replies = [message["content"] for message in history if message["role"] == "assistant"]
    assert replies[0] == "Welcome to the docks."  # the first turn may open with the greeting
    assert len(set(replies)) == 5  # after it, the greeting and what was said are not said again


def test_a_creators_line_said_among_other_sentences_of_a_reply_is_not_said_again() -> None:
    from inference.narrative.reply_checks import creator_lines

    embedder = HashedWordsEmbedder()
    narrator = Narrator(embedder, lambda: None)
    member = Setting.from_message(docks_narrative()).cast["Eve"]
    sheet = member.sheet
    lines = creator_lines(
        name=sheet.name, greeting=member.greeting, example_dialogue=sheet.example_dialogue, player_name="Wren"
    )
    for line in lines:
        query = embedder.embed([line])[0]  # (D,): the player's words nearest this very line
        chosen = narrator.creator_line(member, query, [], [f"The tide is late tonight. {line}"], "Wren")
        assert chosen != line


# What the model answers, a different line each turn; the player asks about each line's first three words.
LINES = [
    "The lamp has been dark since the storm took the fleet.",
    "Tide water slaps the pilings below.",
    "Gulls circle the gallery at dawn.",
    "Salt crusts every window up here.",
    "Ropes creak whenever boats drift.",
    "Cold fog rolls over those black rocks.",
    "Brass fittings need polishing weekly.",
    "Wind howls hardest before midnight.",
    "Old charts hang beside my desk.",
    "Barrels of oil stand near steps.",
    "Seals bark past breakwater walls.",
    "Kettle steam fogs small panes.",
    "Sailors once sang shanties here.",
]
TURNS = [(" ".join(line.lower().split()[:3]), line + " ") for line in LINES]


class Answering:
    """A model that answers each turn of `TURNS` with its line, and says `again` when asked anything else."""

    def __init__(self, again: str) -> None:
        self.again = again

    def stream(self, messages: list[Any], settings: Any) -> Any:
        said = next(message["content"] for message in reversed(messages) if message["role"] == "user")
        return iter([next((line for asked, line in TURNS if asked in said), self.again)])


def test_a_character_does_not_say_its_own_line_again_a_dozen_turns_later() -> None:
    model = Answering(TURNS[0][1])
    session_host = host()
    session_host.open(session_open())
    narrator = Narrator(HashedWordsEmbedder(), lambda: model)
    link = RecordingLink()
    for sequence, said in enumerate([asked for asked, _ in TURNS] + [TURNS[0][0] + " again"], start=1):
        session_host.input("s", sequence, {"type": "speech", "character": "Eve", "text": said})
        for job in session_host.take_jobs():
            narrator.run(job, link)
            _, character, said_to, reply = link.recorded[-1]
            session_host.conversation_record("s", character, said_to, reply)
    replies = [reply for *_, reply in link.recorded]
    assert replies[:-1] == LINES
    assert replies[-1] != replies[0]


def test_the_character_is_told_to_speak_to_the_name_the_player_gave_not_the_accounts() -> None:
    model = Repeating("The lamp is lit. ")
    session_host = host()
    session_host.open(session_open())
    link = RecordingLink()
    for sequence, said in enumerate(["Evening! I'm Oriel, I mend nets.", "Is the lamp lit tonight?"], start=1):
        session_host.input("s", sequence, {"type": "speech", "character": "Eve", "text": said})
        for job in session_host.take_jobs():
            Narrator(HashedWordsEmbedder(), lambda: model).run(job, link)
            session_host.conversation_record("s", "Eve", job.data["text"], link.recorded[-1][3])
    last = link.of_type(SessionDebugPrompt)[-1]
    assert "speak as Eve to Oriel." in last.messages[0]["content"]


@pytest.mark.parametrize(
    ("written", "memory", "asked"),
    [
        # What the player never told, made up.
        (
            "The inn you stayed at is a small cottage in the countryside. ",
            "I mend clocks in Penzance.",
            "What was the name of the inn I stayed at last night?",
        ),
        # What the player told, about something other than what they asked of.
        (
            "You're Fennimore, and you mentioned the boat over. ",
            "Good evening, I'm Fennimore.",
            "Do you remember what my dog is called? I must have mentioned him on the boat over.",
        ),
    ],
)
def test_asked_about_themselves_what_nothing_recalled_answers_the_player_is_told_nothing_made_up(
    written: str, memory: str, asked: str
) -> None:
    model = Repeating(written)
    session_host = host()
    session_host.open(session_open())
    link = RecordingLink(memories=[memory])
    session_host.input("s", 1, {"type": "speech", "character": "Eve", "text": asked})
    run_jobs(session_host, Narrator(HashedWordsEmbedder(), lambda: model), link)
    assert [reply for *_, reply in link.recorded] == [NOT_RECALLED]
