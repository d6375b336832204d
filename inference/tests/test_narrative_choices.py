"""Live choices: each authored choice rewritten for the scene, the checks a person would agree with, and the
authored text wherever a rewrite fails them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from inference.language.base import GenerationSettings, Message
from inference.language.embedding import HashedWordsEmbedder
from inference.narrative.choices import (
    ChoiceConfig,
    generate_choices,
    option_from,
    pair_problems,
    rewrite_messages,
    shortened,
    wording_problems,
)

EMBEDDER = HashedWordsEmbedder()
SCENE = "A dim cellar with a rusty door in the far wall and water dripping from the ceiling."
AUTHORED = [
    {"text": "Force the rusty door", "to": "stair", "leads_to": "The rusty door gives way onto a stone stair."},
    {"text": "Search the cellar", "to": "brick", "leads_to": "Behind a barrel in the cellar you find a loose brick."},
]
BEAT = {"scene": SCENE, "guidance": "Find a way out.", "authored": AUTHORED}
# Hashed words give lower cosines than MiniLM; the measured rules are the same.
LENIENT = ChoiceConfig(min_relevance=0.05)


class RewritingModel:
    """Returns scripted continuations per authored choice (found by its verb, the reply's seed)."""

    def __init__(self, replies: dict[str, list[str]]) -> None:
        self.replies = replies
        self.requests: list[tuple[list[Message], int, int]] = []

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        yield self.replies[messages[-1]["content"]][0]

    def candidates(self, messages: list[Message], settings: GenerationSettings, count: int) -> list[str]:
        self.requests.append((messages, count, settings.max_new_tokens))
        return (self.replies[messages[-1]["content"]] * count)[:count]


def pair(first: str, second: str) -> list[dict[str, str]]:
    return [{"text": first, "to": "stair"}, {"text": second, "to": "brick"}]


def test_a_seeded_continuation_becomes_a_tidy_choice() -> None:
    assert option_from("Force", " the **rusty door** open.") == "Force the rusty door open"
    assert option_from("Force", "\nScene: a cellar") == "Force"


def test_a_choice_must_open_with_something_a_player_can_do() -> None:
    assert wording_problems("Kick the rusty door open") == []
    assert wording_problems("Quietly open the rusty door") == []
    assert any("verb" in problem for problem in wording_problems("Navigate the dark cellar"))
    assert any("verb" in problem for problem in wording_problems("The door is rusty"))


@settings(max_examples=40, deadline=None)
@given(
    verb=st.sampled_from(["Prise", "Yank", "Telephone", "Unbolt", "Coax", "Shin"]),
    rest=st.sampled_from(["the lid off the crate", "the lever down hard", "up the drainpipe"]),
)
def test_a_verb_the_creator_opened_a_choice_with_is_one_a_player_can_do(verb: str, rest: str) -> None:
    creator = [f"{verb} {rest}", "Walk away"]
    assert not any("verb" in problem for problem in wording_problems(f"{verb} the old gate", creator_choices=creator))
    assert any("verb" in problem for problem in wording_problems("Navigate the old gate", creator_choices=creator))


def test_a_verb_the_creator_put_before_to_may_stand_before_to() -> None:
    creator = ["Appeal to the listeners on air"]
    assert wording_problems("Appeal to the night crew", creator_choices=creator) == []
    assert any("lost what it acts on" in problem for problem in wording_problems("Appeal to the night crew"))
    assert any(
        "lost what it acts on" in problem for problem in wording_problems("Free to the wolf", creator_choices=creator)
    )


def test_words_from_outside_the_world_and_half_phrases_are_refused() -> None:
    assert any("outside the world" in problem for problem in wording_problems("Take the wound of this simple game"))
    assert any("mid-phrase" in problem for problem in wording_problems("Kick the rusty door and"))
    assert any("speaks as" in problem for problem in wording_problems("Search the cellar, I have no more"))
    assert any("words" in problem for problem in wording_problems("Go"))
    assert any("lost what it acts on" in problem for problem in wording_problems("Free to the wolf"))
    assert any("whole phrase" in problem for problem in wording_problems("Lower the the sail"))
    assert any("what is" in problem for problem in wording_problems("Grab the purse is taken"))
    assert any("heading" in problem for problem in wording_problems("Search the Cellar - Find a Key"))
    assert wording_problems("Pay the ferryman a coin") == []


def test_an_article_whose_adjectives_run_into_a_preposition_has_lost_its_noun() -> None:
    assert any("whole phrase" in problem for problem in wording_problems("Climb the upper to the old city"))
    assert any("whole phrase" in problem for problem in wording_problems("Lower the torn"))
    assert wording_problems("Turn back to the far end") == []
    assert wording_problems("Climb the top of the ladder") == []


def test_a_choice_must_act_on_something_the_beat_mentions() -> None:
    problems = pair_problems(pair("Kick the rusty door", "Search the right one"), BEAT, EMBEDDER, LENIENT)
    assert problems == ["'Search the right one': acts on nothing the beat mentions"]


def test_a_pair_a_person_would_accept_has_no_problems() -> None:
    assert pair_problems(pair("Kick the rusty door open", "Search the cellar barrels"), BEAT, EMBEDDER, LENIENT) == []


def test_two_choices_that_say_the_same_thing_are_not_a_pair() -> None:
    problems = pair_problems(pair("Open the rusty door", "Open the rusty door now"), BEAT, EMBEDDER, LENIENT)
    assert any("same" in problem for problem in problems)


def test_a_choice_must_read_like_its_own_destination_not_the_others() -> None:
    problems = pair_problems(pair("Search the cellar barrels", "Force the rusty door"), BEAT, EMBEDDER, LENIENT)
    assert any("another choice's destination" in problem for problem in problems)


def test_a_choice_must_be_about_the_beat() -> None:
    problems = pair_problems(pair("Kick the rusty door", "Sing about distant mountains"), BEAT, EMBEDDER)
    assert any("not about this beat" in problem for problem in problems)


def test_each_authored_choice_is_rewritten_and_keeps_its_destination() -> None:
    model = RewritingModel({"Force the": [" rusty door open"], "Search the": [" cellar behind the barrel"]})
    result = generate_choices(model, EMBEDDER, scene=SCENE, authored=AUTHORED, config=LENIENT, seed=3)
    assert result.source == "generated"
    assert result.choices == (
        {"text": "Force the rusty door open", "to": "stair"},
        {"text": "Search the cellar behind the barrel", "to": "brick"},
    )
    batch = LENIENT.candidates_per_destination
    assert [(count, tokens) for _, count, tokens in model.requests] == [(batch, 10), (batch, 10)]
    assert "stone stair" in model.requests[0][0][-2]["content"]  # the rewrite is told where it leads


def test_other_work_may_run_between_one_choices_rewrites_and_the_nexts() -> None:
    model = RewritingModel({"Force the": [" rusty door open"], "Search the": [" cellar behind the barrel"]})
    requests_at_pause: list[int] = []
    generate_choices(
        model,
        EMBEDDER,
        scene=SCENE,
        authored=AUTHORED,
        config=LENIENT,
        seed=3,
        between_choices=lambda: requests_at_pause.append(len(model.requests)),
    )
    assert requests_at_pause == [1]  # after the first choice's rewrites, before the second's


def test_a_rewrite_that_fails_gives_way_to_its_authored_choice_alone() -> None:
    model = RewritingModel({"Force the": [" rusty door open"], "Search the": [" game of this tournament"]})
    result = generate_choices(model, EMBEDDER, scene=SCENE, authored=AUTHORED, config=LENIENT)
    assert result.source == "mixed"
    assert result.texts == ("Force the rusty door open", "Search the cellar")
    assert [choice["to"] for choice in result.choices] == ["stair", "brick"]


def test_nonsense_falls_back_to_the_authored_choices() -> None:
    model = RewritingModel({"Force the": [" <|im_start|>user: hello"], "Search the": [" ???"]})
    result = generate_choices(model, EMBEDDER, scene=SCENE, authored=AUTHORED, config=LENIENT)
    assert result.source == "authored"
    assert result.texts == ("Force the rusty door", "Search the cellar")


def test_a_rewrite_that_only_repeats_the_authored_choice_is_not_counted_as_written() -> None:
    model = RewritingModel({"Force the": [" rusty door"], "Search the": [" cellar"]})
    result = generate_choices(model, EMBEDDER, scene=SCENE, authored=AUTHORED, config=LENIENT)
    assert result.source == "authored"


def test_a_long_scene_is_cut_at_a_sentence_end() -> None:
    scene = "The cellar is dim. " * 20
    assert shortened(scene, 40) == "The cellar is dim. The cellar is dim."


def test_the_reply_is_seeded_with_the_authored_verb_and_its_article_or_particle() -> None:
    assert rewrite_messages(SCENE, AUTHORED[0])[-1] == {"role": "assistant", "content": "Force the"}
    assert rewrite_messages(SCENE, {"text": "Hide behind the crates", "to": "x"})[-1]["content"] == "Hide behind"
    assert rewrite_messages(SCENE, {"text": "Pick locks", "to": "x"})[-1]["content"] == "Pick"


def test_the_rewrite_closest_to_its_own_destination_is_offered_first() -> None:
    model = RewritingModel({"Force the": [" door open", " rusty door onto the stone stair"], "Search the": [" barrel"]})
    result = generate_choices(model, EMBEDDER, scene=SCENE, authored=AUTHORED, config=LENIENT, seed=1)
    assert result.texts[0] == "Force the rusty door onto the stone stair"


def test_common_verbs_are_a_players_and_words_the_beat_uses_are_the_worlds() -> None:
    for text in ("Shelter in the walled ruins", "Salvage the wreck", "Seal the breach", "Answer the raven"):
        assert wording_problems(text) == [], text
    assert wording_problems("Accept the game of dice") == ["words from outside the world: game"]
    assert wording_problems("Accept the game of dice", world_words=frozenset({"game", "dice"})) == []


def authored_choices(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        yield from (choice["text"] for choice in node.get("choices", []))
        node = list(node.values())
    if isinstance(node, list):
        for child in node:
            yield from authored_choices(child)


def test_every_choice_the_demo_worlds_author_reads_as_something_a_player_can_do() -> None:
    # A creator's choice the checks refuse can never be rewritten for its beat: players always see it as authored.
    demo = Path(__file__).resolve().parents[2] / "worlds" / "demo_content"
    texts = [text for path in sorted(demo.glob("*.json")) for text in authored_choices(json.loads(path.read_text()))]
    assert texts
    assert {text: wording_problems(text) for text in texts if wording_problems(text)} == {}
