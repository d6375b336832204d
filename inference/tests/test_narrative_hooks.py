"""Hook branches: nearest intent, the refusals (off-topic, a question, small talk), per-branch scores, the model's
tie-break."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.language.base import GenerationSettings, Message
from inference.language.embedding import HashedWordsEmbedder
from inference.narrative.hooks import Branch, BranchClassifier, BranchConfig, asks, fallback_messages

BRANCHES = [
    Branch("bribe", "offer the guard gold coins", ("here is gold for you", "I pay with coins")),
    Branch("fight", "attack the guard with a sword", ("I punch him", "draw my sword and strike")),
]


class AnsweringModel:
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        yield self.answer


def test_an_input_goes_to_the_branch_whose_texts_it_is_nearest() -> None:
    classifier = BranchClassifier(BRANCHES, HashedWordsEmbedder(), BranchConfig(threshold=0.2))
    decision = classifier.classify("here, take these gold coins")
    assert decision.branch == "bribe" and decision.decided_by == "similarity"
    assert set(decision.scores) == {"bribe", "fight"}
    assert decision.scores["bribe"] > decision.scores["fight"]
    assert classifier.classify("strike with my sword").branch == "fight"


def test_an_input_about_nothing_in_the_hook_falls_back() -> None:
    classifier = BranchClassifier(BRANCHES, HashedWordsEmbedder(), BranchConfig(threshold=0.2))
    decision = classifier.classify("sing loudly tonight")
    assert decision.branch is None and decision.decided_by == "threshold"
    assert set(decision.scores) == {"bribe", "fight"}


def test_a_tie_is_broken_by_the_model_when_it_names_a_branch() -> None:
    tied = [Branch("left", "go left", ()), Branch("right", "go right", ())]
    # Only the tie is under test: the small-talk refusal, which hashed words make a matter of collisions, is off.
    config = BranchConfig(threshold=0.1, centered_threshold=-1, tie_margin=0.5, small_talk_margin=2.0)
    # "go" is shared; the two intents score alike for "go", so the model decides: "B" is the second-ranked.
    by_model = BranchClassifier(tied, HashedWordsEmbedder(), config, language_model=AnsweringModel(" B."))
    decision = by_model.classify("go")
    assert decision.decided_by == "model"
    assert decision.branch in {"left", "right"}
    unhelpful = BranchClassifier(tied, HashedWordsEmbedder(), config, language_model=AnsweringModel(" hmm"))
    assert unhelpful.classify("go").decided_by == "similarity"


class ScoringModel:
    """Finds "go right" likely whatever the player said: its likelihood must decide a near tie."""

    def __init__(self) -> None:
        self.contexts: list[str] = []

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        raise AssertionError("a model that scores is not asked to answer")

    def continuation_logprob(self, context: str, continuation: str) -> float:
        self.contexts.append(context)
        return -1.0 if continuation == "go right" and "..." not in context else -3.0


def test_a_model_that_scores_breaks_a_tie_by_calibrated_likelihood() -> None:
    tied = [Branch("left", "go left", ()), Branch("right", "go right", ())]
    model = ScoringModel()
    # Only the tie is under test: the small-talk refusal, which hashed words make a matter of collisions, is off.
    config = BranchConfig(threshold=0.1, centered_threshold=-1, tie_margin=0.5, small_talk_margin=2.0)
    classifier = BranchClassifier(tied, HashedWordsEmbedder(), config, language_model=model, presentation="Two roads.")
    decision = classifier.classify("go")
    assert (decision.branch, decision.decided_by) == ("right", "model")
    assert model.contexts[0].startswith('Two roads. The player says: "..."')  # the calibration baseline


def test_a_hook_needs_a_branch() -> None:
    with pytest.raises(ValueError, match="at least one branch"):
        BranchClassifier([], HashedWordsEmbedder())


def test_the_fallback_prompt_carries_the_hooks_spirit_and_the_players_words() -> None:
    messages = fallback_messages(
        presentation="A guard blocks the gate.", guidance="Keep it tense.", player_input="I dance"
    )
    assert "Keep it tense." in messages[0]["content"]
    assert "A guard blocks the gate." in messages[1]["content"] and "I dance" in messages[1]["content"]


def test_a_question_put_to_the_figure_is_no_branch_but_a_question_that_proposes_is_read() -> None:
    classifier = BranchClassifier(BRANCHES, HashedWordsEmbedder(), BranchConfig(threshold=0.2))
    decision = classifier.classify("who gave you that sword?")
    assert decision.branch is None and decision.decided_by == "question"
    assert classifier.classify("what if I pay with coins?").branch == "bribe"
    assert asks("Is the water cold?") and asks("why are you here") and asks("how long have you waited?")
    assert not asks("would a pouch of gold change your mind?") and not asks("how much to let me pass?")


@pytest.mark.parametrize(
    "text",
    [
        "so, who sent you here?",
        "Eve, do you know this guard?",
        "you been here long, soldier?",
        "can you tell me what's behind the gate?",
        "I ask him where the captain is",
        "I wonder how he got there",
        "tell me about the river",
        "how much do you usually charge?",
    ],
)
def test_questions_however_put_and_requests_to_be_told_ask_and_choose_no_branch(text: str) -> None:
    assert asks(text)
    classifier = BranchClassifier(BRANCHES, HashedWordsEmbedder(), BranchConfig(threshold=0.0))
    assert classifier.classify(text).decided_by == "question"


@pytest.mark.parametrize(
    "text",
    [
        "I ask the fishermen to help him",
        "I tell him the captain is expecting me",
        "can I pay you to let me through?",
        "how much for the crossing?",
        "I show him the orders and explain",
        "show me in, and I will pay",
    ],
)
def test_a_request_to_act_or_an_offer_is_not_taken_for_a_question(text: str) -> None:
    assert not asks(text)


def test_an_input_nearer_to_small_talk_than_to_any_branch_is_no_branch() -> None:
    classifier = BranchClassifier(BRANCHES, HashedWordsEmbedder(), BranchConfig(threshold=0.0, centered_threshold=-1))
    decision = classifier.classify("I smile warmly at the guard")
    assert decision.branch is None and decision.decided_by == "small talk"


def test_the_best_branch_must_be_near_one_of_its_own_texts() -> None:
    # "sword" is in a fight text; everything else in the input is in none: raw and centered both fall short.
    classifier = BranchClassifier(BRANCHES, HashedWordsEmbedder(), BranchConfig(threshold=0.6))
    assert classifier.classify("a sword lies on the table by the window").decided_by == "threshold"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_classify_never_raises_and_names_a_branch_or_none(text: str) -> None:
    decision = BranchClassifier(BRANCHES, HashedWordsEmbedder()).classify(text)
    assert decision.branch in {None, "bribe", "fight"}
    assert set(decision.scores) == {"bribe", "fight"}


@pytest.mark.slow
def test_minilm_classifies_the_scripted_paraphrases() -> None:
    from bench.narrative_quality import DATA, default_model, hook_figures
    from inference.language.embedding import default_embedder

    branch, fallback = hook_figures(default_embedder(), default_model(), DATA)  # the tuning part
    # A floor under today's figures, so a change that loses inputs fails here; whether the classifier meets
    # the issue's targets (0.85 and 0.8) is `make eval`'s question, asked of the untouched part.
    assert branch.rate >= 0.68 and fallback.rate >= 0.86
