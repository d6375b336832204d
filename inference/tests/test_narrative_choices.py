"""Live choices: parsing numbered lists, measuring options, keeping the best pair, falling back to authored ones."""

from __future__ import annotations

from collections.abc import Iterator

from inference.language.base import GenerationSettings, Message
from inference.language.embedding import HashedWordsEmbedder
from inference.narrative.choices import (
    EXAMPLE_ANSWER,
    REPLY_START,
    ChoiceConfig,
    best_pair,
    choice_messages,
    generate_choices,
    option_from,
)

EMBEDDER = HashedWordsEmbedder()
SCENE = "A dim cellar with a rusty door in the far wall and water dripping from the ceiling."
GUIDANCE = "The player should find a way out of the cellar."
AUTHORED = ["Force the rusty door", "Search the cellar"]
# Hashed words give lower cosines than MiniLM; the measured rules are the same.
LENIENT = ChoiceConfig(min_relevance=0.1)


class CandidateModel:
    """Returns one scripted reply per candidate, as the local backend's batched `candidates` does."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.requests: list[tuple[list[Message], int]] = []

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        yield self.replies[0]

    def candidates(self, messages: list[Message], settings: GenerationSettings, count: int) -> list[str]:
        self.requests.append((messages, count))
        return (self.replies * count)[:count]


class StreamOnlyModel:
    """A backend without batching: one request per candidate, with a different seed each time."""

    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        self.seeds.append(settings.seed)
        yield [" kick the rusty door open", " search the dripping cellar walls"][len(self.seeds) % 2]


def test_a_continuation_becomes_a_tidy_capitalised_action() -> None:
    assert option_from(" try to **open the rusty door**.") == "Open the rusty door"
    assert option_from(" ...") == ""


def test_the_best_passing_pair_is_kept_and_poor_options_are_dropped() -> None:
    options = [
        "Kick the rusty door open",
        "Search the cellar walls for a draft",
        "Do",  # too short
        "What is behind the door?",  # a question
        "You feel sad about the rusty door in the cellar",  # opens with a pronoun
        "The player should find a way out of the cellar",  # the guidance, copied
        "Kick the rusty door and",  # cut off mid-sentence
        EXAMPLE_ANSWER.capitalize(),  # the worked example's answer, repeated
    ]
    found = best_pair(options, SCENE, GUIDANCE, EMBEDDER, LENIENT)
    assert found is not None
    pair, relevance = found
    assert set(pair) == {"Kick the rusty door open", "Search the cellar walls for a draft"}
    assert all(score >= LENIENT.min_relevance for score in relevance)


def test_two_options_that_say_the_same_thing_are_not_a_pair() -> None:
    assert best_pair(["Open the rusty door", "Open the rusty door now"], SCENE, GUIDANCE, EMBEDDER, LENIENT) is None


def test_generated_choices_come_from_the_candidates_of_one_batch() -> None:
    model = CandidateModel([" kick the rusty door open", " search the cellar walls for a draft.", " nonsense"])
    result = generate_choices(model, EMBEDDER, scene=SCENE, guidance=GUIDANCE, authored=AUTHORED, config=LENIENT)
    assert result.source == "generated"
    assert set(result.choices) == {"Kick the rusty door open", "Search the cellar walls for a draft"}
    messages, count = model.requests[0]
    assert count == LENIENT.candidates
    assert messages[-1] == {"role": "assistant", "content": REPLY_START}


def test_nonsense_falls_back_to_the_authored_choices() -> None:
    model = CandidateModel([" the the the", " <|im_start|>user: hello", " ???", " 2019-08-31"])
    result = generate_choices(model, EMBEDDER, scene=SCENE, guidance=GUIDANCE, authored=AUTHORED, config=LENIENT)
    assert result.source == "authored"
    assert result.choices == tuple(AUTHORED)


def test_a_backend_without_batching_is_asked_once_per_candidate_with_distinct_seeds() -> None:
    model = StreamOnlyModel()
    result = generate_choices(
        model, EMBEDDER, scene=SCENE, guidance=GUIDANCE, authored=AUTHORED, config=LENIENT, seed=5
    )
    assert result.source == "generated"
    assert model.seeds == list(range(5, 5 + LENIENT.candidates))


def test_the_prompt_names_the_scene_and_guidance() -> None:
    messages = choice_messages(SCENE, GUIDANCE)
    assert SCENE in messages[-2]["content"] and GUIDANCE in messages[-2]["content"]
