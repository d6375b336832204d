"""A character's prompt: who they are, where they are, what they remember and know, and the conversation.

The layout follows the character-card convention (Character Card V2/V3, as SillyTavern assembles it): the
system message holds the system prompt, persona, personality, speaking style, scenario, the world's rules,
the lorebook entries the platform activated (worlds.formats.lore_activation decides which), the memories
retrieval chose (inference.narrative.memory) and the clues the character may reveal; the recent turns follow
as user and assistant messages. `creator_notes` (notes to people reading the card) and `secrets` (what the
character hides; clues are how a creator lets it out) are never read. Post-history instructions join the
system message instead of following the history, because several chat templates (Gemma's, Mistral's) refuse
a system message after the first, and a larger model behind HTTP must take these prompts unchanged.

The character's voice comes from its creator's own lines: the example dialogue (`mes_example`) becomes
worked turns before the conversation, in the names of this character and this player, and the greeting is
quoted as how the character sounds. Only the last two exchanges follow: a small model copies what it sees,
so one degenerate reply fed back whole breeds the next.

Grounding. A question about the player is answered from memory by extraction
(inference.narrative.recollection): the answering sentence, said back in the second person, opens the reply
as a final assistant message the model continues, so the fact is stated every time and the model adds the
character's colour after it. Any other question is grounded the same way in what the character knows
(inference.narrative.knowledge: clues, lore, persona and the world's rules in its own voice), when one of
those sentences is close enough to the question.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inference.language.base import GenerationSettings, LanguageModel, Message
from inference.narrative.memory import to_second_person
from inference.narrative.recollection import Recollection, is_question
from inference.narrative.reply_checks import example_turns

CHARACTER_FIELDS = (
    "name", "persona", "personality", "speaking_style", "scenario", "example_dialogue", "goals", "system_prompt",
    "post_history_instructions",
)  # fmt: skip


@dataclass(frozen=True)
class CharacterSheet:
    """The parts of an authored character that reach a prompt."""

    name: str
    persona: str
    personality: str = ""
    speaking_style: str = ""
    scenario: str = ""
    example_dialogue: str = ""
    goals: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""

    @classmethod
    def from_document(cls, character: Mapping[str, Any]) -> CharacterSheet:
        """From a character of a published world document; fields not listed in CHARACTER_FIELDS are ignored."""
        return cls(**{name: str(character.get(name) or "") for name in CHARACTER_FIELDS})


@dataclass(frozen=True)
class PromptConfig:
    """How much of the conversation a prompt carries and when a reply is grounded."""

    # Past turns (a player line and a reply each): enough for a follow-up; older ones live on as memories,
    # and fewer turns give a drifting reply fewer chances to be copied.
    history_turns: int = 2
    # MiniLM cosine between a question and a sentence the character knows from which the reply states it; the
    # sentence must also lead the runner-up by `grounding_margin`, or the question fits two and gets neither.
    grounding_threshold: float = 0.4
    grounding_margin: float = 0.05
    # Told to the model: short replies stay coherent on a small model and arrive quickly on a CPU.
    reply_length: str = "Reply in one to three short sentences, in plain spoken English."


@dataclass(frozen=True)
class Fact:
    """A memory or a revealed clue that may ground a reply."""

    text: str
    embedding: np.ndarray  # (D,) unit vector
    # "memory" (the player's words, said back in the second person), "clue" or "knowledge" (the creator's
    # words, already in the character's voice)
    source: str


@dataclass
class CharacterPrompt:
    """The messages for the language model and what the creator's debug panel shows of them."""

    messages: list[Message]
    reply_prefix: str  # the start of the reply the model continues; "" when ungrounded
    sections: dict[str, str] = field(default_factory=dict)


def grounding_fact(
    player_message: str, question_embedding: np.ndarray, facts: Sequence[Fact], config: PromptConfig
) -> Fact | None:
    """The fact a question is about, when one is close enough; None for statements and unrelated questions."""
    if not facts or not is_question(player_message):
        return None
    similarities = np.stack([fact.embedding for fact in facts]) @ question_embedding  # (F,)
    ranked = np.sort(similarities)[::-1]
    best = int(similarities.argmax())
    if ranked[0] < config.grounding_threshold:
        return None
    if len(ranked) > 1 and ranked[0] - ranked[1] < config.grounding_margin:
        return None  # two facts fit the question about equally: better no seed than the wrong one
    return facts[best]


def reply_prefix_for(fact: Fact) -> str:
    """The opening of a grounded reply: a memory said back to the player, or what the character knows."""
    text = to_second_person(fact.text) if fact.source == "memory" else fact.text
    return text.strip()


def character_prompt(
    *,
    character: CharacterSheet,
    player_message: str,
    history: Sequence[Message] = (),
    world_rules: str = "",
    lore: Sequence[str] = (),
    memories: Sequence[str] = (),
    clues: Sequence[str] = (),
    grounding: Fact | None = None,
    recollection: Recollection | None = None,
    introduced: str = "",
    greeting: str = "",
    player_name: str = "the player",
    config: PromptConfig | None = None,
) -> CharacterPrompt:
    """Assemble the prompt for the character's next reply to `player_message`.

    `lore` holds the texts of the lorebook entries already activated for this conversation, in prompt order;
    `memories` the texts retrieval chose; `clues` the texts of clues whose conditions hold; `recollection`
    the player's own words that answer a question about them (from `recollect`), else `grounding`, a clue to
    state (from `grounding_fact`), if any; `introduced` the name the player just gave themselves, which the
    reply opens by welcoming, since a small model answers an introduction with one of its own.
    """
    config = config or PromptConfig()
    name = character.name
    sections: dict[str, str] = {}
    sections["instructions"] = " ".join(
        part
        for part in (
            character.system_prompt.strip(),
            f"You are {name}. Stay in character and speak as {name} to {player_name}. {config.reply_length}",
        )
        if part
    )
    for title, text in (
        ("persona", character.persona),
        ("personality", character.personality),
        ("speaking style", character.speaking_style),
        ("goals", character.goals),
        ("scenario", character.scenario),
        ("world", world_rules),
    ):
        if text.strip():
            sections[title] = text.strip()
    if greeting.strip():
        sections["voice"] = f'You sound like this: "{greeting.strip()}"'
    if lore:
        sections["lore"] = "\n".join(f"- {entry.strip()}" for entry in lore if entry.strip())
    if memories:
        told = "\n".join(f'- {player_name} told you: "{memory.strip()}"' for memory in memories)
        sections["memories"] = f"What you remember about {player_name}:\n{told}"
    if clues:
        known = "\n".join(f"- {clue.strip()}" for clue in clues)
        sections["clues"] = f"What you know and may tell {player_name} when asked:\n{known}"
    if character.post_history_instructions.strip():
        sections["post-history instructions"] = character.post_history_instructions.strip()
    system = "\n\n".join(
        text if title in {"instructions", "memories", "clues"} else f"{title.capitalize()}: {text}"
        for title, text in sections.items()
    )
    messages: list[Message] = [{"role": "system", "content": system}]
    examples = example_messages(character, player_name)
    if examples:
        sections["example dialogue"] = "\n".join(f"{message['role']}: {message['content']}" for message in examples)
    messages += examples
    messages += list(history)[-2 * config.history_turns :] if config.history_turns else []
    messages.append({"role": "user", "content": player_message})
    if recollection is not None:
        prefix = recollection.statement
    elif introduced:
        prefix = f"Welcome, {introduced}."
    else:
        prefix = reply_prefix_for(grounding) if grounding is not None else ""
    if prefix:
        messages.append({"role": "assistant", "content": prefix})
        sections["reply prefix"] = prefix
    return CharacterPrompt(messages=messages, reply_prefix=prefix, sections=sections)


def example_messages(character: CharacterSheet, player_name: str) -> list[Message]:
    """The example dialogue as alternating player and character turns, ending on the character's (chat
    templates such as Gemma's insist that roles alternate)."""
    messages: list[Message] = []
    for speaker, text in example_turns(character.example_dialogue, name=character.name, player_name=player_name):
        role = "assistant" if speaker == "character" else "user"
        if messages and messages[-1]["role"] == role:
            messages[-1] = {"role": role, "content": f"{messages[-1]['content']} {text}"}
        elif messages or role == "user":
            messages.append({"role": role, "content": text})
    if messages and messages[-1]["role"] == "user":
        messages.pop()
    return messages


def stream_reply(model: LanguageModel, prompt: CharacterPrompt, settings: GenerationSettings) -> Iterator[str]:
    """The character's reply as the player sees it: the grounding prefix first, then the model's words."""
    pieces = model.stream(prompt.messages, settings)
    if prompt.reply_prefix:
        yield prompt.reply_prefix
    # An ungrounded reply may open with a newline or a space the model put after the template's turn marker;
    # a continuation needs one space after the prefix's last word.
    for piece in pieces:
        piece = piece.lstrip()
        if piece:
            yield f" {piece}" if prompt.reply_prefix else piece
            break
    yield from pieces
