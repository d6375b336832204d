"""Prompt assembly: what reaches the prompt (and what never does), history, and grounded reply prefixes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inference.language.base import GenerationSettings, Message
from inference.language.embedding import HashedWordsEmbedder
from inference.narrative.prompting import (
    CharacterSheet,
    Fact,
    PromptConfig,
    character_prompt,
    grounding_fact,
    is_question,
    stream_reply,
)

EMBEDDER = HashedWordsEmbedder()
EVE_DOCUMENT = {
    "name": "Eve",
    "persona": "The harbourmaster of Saltmarsh.",
    "personality": "Warm and wry.",
    "speaking_style": "Short sentences.",
    "scenario": "A foggy evening on the pier.",
    "creator_notes": "NOTE-FOR-READERS: test this card with the harbour world",
    "secrets": "SECRET: Eve smuggles silk.",
    "post_history_instructions": "Never mention the year.",
}


def facts(texts: list[str], source: str = "memory") -> list[Fact]:
    return [Fact(text, vector, source) for text, vector in zip(texts, EMBEDDER.embed(texts), strict=True)]


def test_creator_notes_and_secrets_never_reach_the_prompt() -> None:
    prompt = character_prompt(character=CharacterSheet.from_document(EVE_DOCUMENT), player_message="Hello!")
    everything = " ".join(message["content"] for message in prompt.messages)
    assert "NOTE-FOR-READERS" not in everything
    assert "SECRET" not in everything
    assert "The harbourmaster of Saltmarsh." in everything
    assert "Never mention the year." in prompt.messages[0]["content"]


def test_the_system_message_carries_lore_memories_and_clues_and_the_history_is_trimmed() -> None:
    history: list[Message] = []
    for turn in range(10):
        history += [{"role": "user", "content": f"line {turn}"}, {"role": "assistant", "content": f"reply {turn}"}]
    prompt = character_prompt(
        character=CharacterSheet.from_document(EVE_DOCUMENT),
        player_message="Any news?",
        history=history,
        world_rules="Magic is forbidden in Saltmarsh.",
        lore=["The Gull is a two-masted schooner."],
        memories=["I found a silver key at the docks."],
        clues=["The ledger is hidden under the lighthouse stairs."],
        player_name="Ana",
        config=PromptConfig(history_turns=2),
    )
    system = prompt.messages[0]["content"]
    for text in (
        "Magic is forbidden",
        "two-masted schooner",
        'Ana told you: "I found a silver key',
        "lighthouse stairs",
    ):
        assert text in system
    assert [message["content"] for message in prompt.messages[1:]] == [
        "line 8",
        "reply 8",
        "line 9",
        "reply 9",
        "Any news?",
    ]
    assert prompt.reply_prefix == ""
    assert set(prompt.sections) >= {"instructions", "persona", "lore", "memories", "clues", "world"}


def test_a_question_about_a_memory_seeds_the_reply_with_it_in_the_second_person() -> None:
    memories = facts(["I found a silver key at the docks.", "The bread was warm this morning."])
    question = "What did I find at the docks?"
    fact = grounding_fact(question, EMBEDDER.embed([question])[0], memories, PromptConfig(grounding_threshold=0.3))
    assert fact is memories[0]
    prompt = character_prompt(
        character=CharacterSheet.from_document(EVE_DOCUMENT), player_message=question, grounding=fact
    )
    assert prompt.reply_prefix == "You found a silver key at the docks."
    assert prompt.messages[-1] == {"role": "assistant", "content": "You found a silver key at the docks."}


def test_a_clue_grounds_in_the_creators_words() -> None:
    clues = facts(["The ledger is hidden under the lighthouse stairs."], source="clue")
    question = "Where is the ledger hidden?"
    fact = grounding_fact(question, EMBEDDER.embed([question])[0], clues, PromptConfig(grounding_threshold=0.3))
    prompt = character_prompt(
        character=CharacterSheet(name="Eve", persona="x"), player_message=question, grounding=fact
    )
    assert prompt.reply_prefix == "The ledger is hidden under the lighthouse stairs."


def test_statements_and_unrelated_questions_are_not_grounded() -> None:
    memories = facts(["I found a silver key at the docks."])
    config = PromptConfig(grounding_threshold=0.3)
    statement = "I found a silver key at the docks."
    assert grounding_fact(statement, EMBEDDER.embed([statement])[0], memories, config) is None
    unrelated = "How is the weather in the mountains?"
    assert grounding_fact(unrelated, EMBEDDER.embed([unrelated])[0], memories, config) is None
    assert is_question("remind me of my sister's name") and not is_question("I open the door.")


class ScriptedModel:
    """Answers every prompt with the same pieces, recording the messages it was given."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.seen: list[list[Message]] = []

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        self.seen.append(messages)
        yield from self.pieces


def test_a_grounded_reply_streams_the_prefix_then_the_models_continuation() -> None:
    model = ScriptedModel([" Keep it safe", ", friend."])
    prompt = character_prompt(
        character=CharacterSheet(name="Eve", persona="x"),
        player_message="What did I find?",
        grounding=facts(["I found a silver key."])[0],
    )
    assert "".join(stream_reply(model, prompt, GenerationSettings())) == "You found a silver key. Keep it safe, friend."
    assert model.seen[0][-1]["role"] == "assistant"


def test_an_ungrounded_reply_loses_the_models_leading_whitespace() -> None:
    prompt = character_prompt(character=CharacterSheet(name="Eve", persona="x"), player_message="Hi")
    reply = "".join(stream_reply(ScriptedModel(["\n", "  Welcome", " aboard."]), prompt, GenerationSettings()))
    assert reply == "Welcome aboard."


def test_two_facts_that_fit_a_question_equally_ground_nothing() -> None:
    twins = facts(["I hid the map in the boat.", "I hid the map in the barn."])
    question = "Where did I hide the map?"
    config = PromptConfig(grounding_threshold=0.3, grounding_margin=0.05)
    assert grounding_fact(question, EMBEDDER.embed([question])[0], twins, config) is None


@pytest.mark.slow
def test_the_default_model_states_a_remembered_fact_when_asked() -> None:
    from inference.language.embedding import default_embedder
    from inference.language.local import LocalLanguageModel

    embedder = default_embedder()
    remembered = ["I found a silver key at the docks.", "The bread at the bakery was still warm."]
    question = "What did I find at the docks?"
    vectors = embedder.embed([*remembered, question])
    known = [Fact(text, vector, "memory") for text, vector in zip(remembered, vectors[:2], strict=True)]
    prompt = character_prompt(
        character=CharacterSheet.from_document(EVE_DOCUMENT),
        player_message=question,
        memories=remembered,
        grounding=grounding_fact(question, vectors[2], known, PromptConfig()),
    )
    reply = "".join(stream_reply(LocalLanguageModel(), prompt, GenerationSettings(seed=0, max_new_tokens=24)))
    assert reply.startswith("You found a silver key at the docks.")
    assert "<|im" not in reply and "assistant" not in reply.lower()
