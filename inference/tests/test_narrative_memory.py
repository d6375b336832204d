"""Memory retrieval (relevance, recency, importance within a budget), extraction, second person, consolidation."""

from __future__ import annotations

import statistics
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.language.embedding import HashedWordsEmbedder
from inference.narrative.memory import (
    EPISODIC,
    PINNED,
    SUMMARY,
    ConsolidationConfig,
    Memory,
    MemoryArrays,
    RetrievalConfig,
    consolidate,
    consolidation_due,
    estimate_tokens,
    extract_memories,
    importance_of,
    retrieve,
    scores,
    to_second_person,
)

EMBEDDER = HashedWordsEmbedder()


def arrays_of(memories: list[Memory]) -> MemoryArrays:
    return MemoryArrays.build(memories, EMBEDDER.embed([memory.text for memory in memories]))


def query(text: str) -> np.ndarray:
    return EMBEDDER.embed([text])[0]


def test_an_old_relevant_memory_beats_forty_newer_unrelated_ones() -> None:
    memories = [Memory("I found a silver key at the docks.", 0.5, turn=1)]
    memories += [Memory(f"The weather was grey on day {turn}.", 0.5, turn=turn) for turn in range(2, 42)]
    chosen = retrieve(arrays_of(memories), query("what did I find at the docks"), 42, RetrievalConfig(limit=5))
    assert chosen[0] == 0


def test_recency_orders_equally_relevant_memories_and_importance_outweighs_a_little_age() -> None:
    memories = [Memory("The lantern is red.", 0.5, turn=3), Memory("The lantern is red.", 0.5, turn=30)]
    ranked = scores(arrays_of(memories), query("lantern"), 31, RetrievalConfig())
    assert ranked[1] > ranked[0]
    weighted = [Memory("The lantern is red.", 0.9, turn=28), Memory("The lantern is red.", 0.2, turn=30)]
    ranked = scores(arrays_of(weighted), query("lantern"), 31, RetrievalConfig())
    assert ranked[0] > ranked[1]


def test_pinned_memories_come_first_and_the_token_budget_holds() -> None:
    memories = [Memory("My name is Ana.", 1.0, turn=0, kind=PINNED)]
    memories += [
        Memory(f"I saw ship number {index} sail past the lighthouse today.", 0.5, turn=index) for index in range(30)
    ]
    config = RetrievalConfig(token_budget=40, limit=8)
    chosen = retrieve(arrays_of(memories), query("which ship sailed past the lighthouse"), 31, config)
    assert chosen[0] == 0
    assert sum(estimate_tokens(memories[index].text) for index in chosen) <= 40
    assert len(chosen) == 1 + (40 - estimate_tokens(memories[0].text)) // estimate_tokens(memories[1].text)


def test_no_memories_retrieve_nothing() -> None:
    empty = MemoryArrays.build([], np.zeros((0, 384), dtype=np.float32))
    assert retrieve(empty, query("anything"), 5, RetrievalConfig()) == []


def test_retrieval_over_ten_thousand_memories_takes_well_under_fifty_milliseconds() -> None:
    generator = np.random.default_rng(0)
    vectors = generator.standard_normal((10_000, 384)).astype(np.float32)  # (N, D)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = [Memory(f"memory {index}", float(generator.random()), turn=index) for index in range(10_000)]
    arrays = MemoryArrays.build(memories, vectors)
    target = vectors[1234]
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        chosen = retrieve(arrays, target, 10_000, RetrievalConfig())
        timings.append(time.perf_counter() - started)
    assert 1234 in chosen
    assert statistics.median(timings) < 0.05


def test_statements_are_kept_and_questions_and_small_talk_are_not() -> None:
    extracted = extract_memories("Hello there! What is this place? I lost my map near the old mill. ok thanks", 7)
    assert [memory.text for memory in extracted] == ["I lost my map near the old mill."]
    assert extracted[0].turn == 7 and extracted[0].kind == EPISODIC


@settings(max_examples=60)
@given(
    name=st.from_regex(r"[A-Z][a-z]{1,9}", fullmatch=True),
    greeting=st.sampled_from(["", "Hello Eve. ", "Hi. ", "Good evening, Odo. ", "hey! "]),
    saying=st.sampled_from(["I'm {}.", "I am {}.", "Call me {}.", "Name's {}.", "My name is {}."]),
)
def test_the_players_name_is_kept_however_short_the_sentence_that_tells_it(
    name: str, greeting: str, saying: str
) -> None:
    told = saying.format(name)
    assert [memory.text for memory in extract_memories(greeting + told, 1)] == [told]
    assert importance_of(told) == 1.0


def test_a_request_of_the_character_and_a_bare_yes_or_no_are_not_kept_but_what_follows_no_is() -> None:
    said = "Tell me again. Remind me what the bell means. No. Sure! No, I grew up in Haverlea. No pets live with me."
    assert [memory.text for memory in extract_memories(said, 1)] == ["I grew up in Haverlea.", "No pets live with me."]


def test_self_disclosure_is_more_important_than_remarks_about_the_weather() -> None:
    assert importance_of("My sister Mara sails on the Gull.") > importance_of("The weather is grey.")


def test_the_players_words_are_said_back_in_the_second_person() -> None:
    assert to_second_person("I found a silver key at the docks.") == "You found a silver key at the docks."
    assert to_second_person("My name is Ana and I am a sailor.") == "Your name is Ana and you are a sailor."
    assert to_second_person("I was born in Karsk.") == "You were born in Karsk."
    assert to_second_person("The guard saw me and I'm scared.") == "The guard saw you and you're scared."


def test_consolidation_summarises_the_period_extractively_in_order() -> None:
    config = ConsolidationConfig(every_turns=20, max_sentences=2)
    memories = [
        Memory("I was born in Karsk.", 0.9, turn=3),
        Memory("The bread was warm.", 0.2, turn=5),
        Memory("I owe Brann forty gold coins.", 0.8, turn=12),
        Memory("My name is Ana.", 1.0, turn=0, kind=PINNED),
    ]
    assert not consolidation_due(19, 0, config)
    assert consolidation_due(20, 0, config)
    summary = consolidate(memories, since_turn=0, turn=20, config=config)
    assert summary is not None
    assert summary.text == "I was born in Karsk. I owe Brann forty gold coins."
    assert summary.kind == SUMMARY and summary.turn == 20 and summary.importance == 0.9
    assert consolidate(memories, since_turn=20, turn=40, config=config) is None


def test_the_players_you_is_the_character_said_back_as_i_or_me() -> None:
    assert to_second_person("She said I should find you.") == "She said you should find me."
    assert to_second_person("You are kind and I trust you.") == "I am kind and you trust me."
    assert to_second_person("I know, you were right about me.") == "You know, I was right about you."


def test_a_sentence_that_opens_with_a_pronoun_is_remembered_with_the_one_that_says_who() -> None:
    told = extract_memories("My cousin Hilde keeps the inn. She said I should find you. It rained.", turn=1)
    assert [memory.text for memory in told] == ["My cousin Hilde keeps the inn. She said I should find you."]


@given(
    st.sampled_from(["Hello there.", "Hi!", "Good evening.", "Hey."]),
    st.sampled_from(["Maelis", "Corwen", "Iolo", "Brannock"]),
    st.sampled_from([".", " here.", "!"]),
)
def test_a_bare_name_after_a_greeting_is_the_players_name(greeting: str, name: str, ending: str) -> None:
    told = [memory.text for memory in extract_memories(f"{greeting} {name}{ending} I mend nets for a living.", 1)]
    assert told == [f"I'm {name}.", "I mend nets for a living."]


def test_what_follows_a_greeting_is_no_name_when_it_is_a_courtesy_or_the_characters_name() -> None:
    assert extract_memories("Hello. Sorry.", 1) == []
    assert extract_memories("Hello Eve. Nice night.", 1) == []


@given(st.sampled_from(["maybe you knew him?", "see?", "and look at this?", "ever heard of it?"]))
def test_what_the_player_tells_before_asking_after_it_is_kept(question: str) -> None:
    told = [memory.text for memory in extract_memories(f"My uncle Tobin kept the toll bridge for years, {question}", 1)]
    assert told == ["My uncle Tobin kept the toll bridge for years."]
    assert extract_memories("I wonder, is the lamp out?", 1) == []


@given(
    st.sampled_from(["Say", "Suppose", "Imagine", "What if"]),
    st.sampled_from(["the bridge washed away in the night.", "a whale beached itself below the cliffs."]),
)
def test_a_supposition_or_a_request_to_be_walked_through_is_not_remembered(opening: str, rest: str) -> None:
    assert extract_memories(f"{opening} {rest}", 1) == []
    assert extract_memories("Walk me through the night watch.", 1) == []
    assert [memory.text for memory in extract_memories("Say, I grew up in Tarsk.", 1)] == ["I grew up in Tarsk."]


@given(
    greeting=st.sampled_from(["", "Hello ", "Hi there ", "Good evening, "]),
    name=st.sampled_from(["Eve", "Odo", "Marisol"]),
    told=st.sampled_from(["I'm Rosalind, and I keep bees on my allotment.", "My dog Pickle is waiting at home."]),
)
def test_the_one_the_player_calls_by_name_before_telling_is_not_part_of_what_is_remembered(
    greeting: str, name: str, told: str
) -> None:
    assert [memory.text for memory in extract_memories(f"{greeting}{name}, {told}", 1)] == [told]


@given(st.sampled_from(["By the way.", "And then there's this.", "Well, anyway.", "Just so you know."]))
def test_a_sentence_of_words_that_tell_nothing_is_not_kept(said: str) -> None:
    assert extract_memories(f"{said} I sleep badly in storms.", 1)[0].text == "I sleep badly in storms."
    assert len(extract_memories(f"{said} I sleep badly in storms.", 1)) == 1
