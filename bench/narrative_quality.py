"""The narrative engine's acceptance figures (issue 6) on the scripted sets in tests/data/narrative/.

- memory_recall_at5: a fact the player tells at turn 1 is among the five memories retrieved for a question
  about it at turn 42, after 40 turns of other talk (every line goes through `extract_memories`). Target 0.9.
- memory_use_rate: asked that question, the character's reply (the default SmolLM2-135M, int8, with grounding)
  contains the fact's answer words. Target 0.9.
- hook_branch_accuracy: paraphrased player inputs, none among the authored examples, classified into the
  branch they mean (or into none, for inputs no branch fits), with the default model breaking ties as in
  play. Target 0.85.
- prompt_event_accuracy: typed prompts, none among the classifier's examples, whose events (kind and object)
  equal the expected ones, [] for prompts that are not world changes. Target 0.9.
- choice_pair_pass_rate: beats whose two generated choices pass every measured score; a fallback to the
  authored choices is not a pass. Target 0.9.

--quick (CI) uses three memory-use cases and four beats; retrieval, hooks and world prompts always run whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inference.language.base import GenerationSettings, LanguageModel
from inference.language.embedding import Embedder, default_embedder
from inference.narrative.choices import generate_choices
from inference.narrative.hooks import Branch, BranchClassifier
from inference.narrative.memory import MemoryArrays, RetrievalConfig, extract_memories, retrieve
from inference.narrative.prompting import (
    CharacterSheet,
    Fact,
    PromptConfig,
    character_prompt,
    grounding_fact,
    stream_reply,
)
from inference.narrative.world_prompts import WorldPromptClassifier

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "narrative"
FILLER_TURNS = 40
EVE = CharacterSheet(
    name="Eve",
    persona="Eve is the harbourmaster of Saltmarsh, a foggy port town. She knows every ship and every sailor.",
    personality="Warm, observant, a little wry.",
    speaking_style="Short sentences, a sailor's words.",
)
REPLY = GenerationSettings(temperature=0.7, max_new_tokens=40, seed=0)


def default_model() -> LanguageModel:
    """SmolLM2-135M, int8, on one thread: on a shared machine a second torch thread waits on busy cores (see
    LocalModelConfig.threads). Imported here so that `python -m bench` does not load transformers for others."""
    from inference.language.local import LocalLanguageModel, LocalModelConfig

    return LocalLanguageModel(LocalModelConfig(threads=1))


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def conversation(case: dict[str, Any], filler: list[str], offset: int) -> list[tuple[int, str]]:
    """(turn, player line) pairs: the fact at turn 1, then 40 lines of other talk."""
    lines = [(1, case["fact"])]
    for turn in range(FILLER_TURNS):
        lines.append((turn + 2, filler[(offset + turn) % len(filler)]))
    return lines


def retrieved_for(case: dict[str, Any], filler: list[str], offset: int, embedder: Embedder) -> tuple[list[str], bool]:
    """The texts retrieved for the case's question, and whether the fact is among them."""
    memories = [memory for turn, line in conversation(case, filler, offset) for memory in extract_memories(line, turn)]
    arrays = MemoryArrays.build(memories, embedder.embed([memory.text for memory in memories]))
    question_turn = FILLER_TURNS + 2
    query = embedder.embed([case["question"]])[0]
    chosen = retrieve(arrays, query, question_turn, RetrievalConfig(limit=5, token_budget=10_000))
    texts = [memories[index].text for index in chosen]
    return texts, case["fact"] in texts


def memory_figures(embedder: Embedder, model: LanguageModel, use_cases: int) -> dict[str, float]:
    data = load("memory.json")
    cases, filler = data["cases"], data["filler"]
    recalled = 0
    used = 0
    for offset, case in enumerate(cases):
        texts, found = retrieved_for(case, filler, offset * 7, embedder)
        recalled += found
        if offset >= use_cases:
            continue
        question = embedder.embed([case["question"]])[0]
        facts = [Fact(text, vector, "memory") for text, vector in zip(texts, embedder.embed(texts), strict=True)]
        prompt = character_prompt(
            character=EVE,
            player_message=case["question"],
            memories=texts,
            grounding=grounding_fact(case["question"], question, facts, PromptConfig()),
        )
        reply = "".join(stream_reply(model, prompt, REPLY)).lower()
        used += all(word in reply for word in case["answer_words"])
    figures = {"memory_recall_at5": recalled / len(cases)}
    if use_cases:
        figures["memory_use_rate"] = used / use_cases
    return figures


def hook_branch_accuracy(embedder: Embedder, model: LanguageModel) -> float:
    correct = total = 0
    for hook in load("hooks.json")["hooks"]:
        branches = [Branch(item["name"], item["intent"], tuple(item["examples"])) for item in hook["branches"]]
        classifier = BranchClassifier(branches, embedder, language_model=model, presentation=hook["presentation"])
        for item in hook["inputs"]:
            correct += classifier.classify(item["text"]).branch == item["branch"]
            total += 1
    return correct / total


def prompt_event_accuracy(embedder: Embedder) -> float:
    classifier = WorldPromptClassifier(embedder)
    cases = load("world_prompts.json")["cases"]
    correct = 0
    for case in cases:
        found = [(event["kind"], event.get("object")) for event in classifier.events(case["prompt"])]
        expected = [(event["kind"], event.get("object")) for event in case["events"]]
        correct += found == expected
    return correct / len(cases)


def choice_pair_pass_rate(embedder: Embedder, model: LanguageModel, beats_count: int) -> float:
    beats = load("choices.json")["beats"][:beats_count]
    passed = 0
    for index, beat in enumerate(beats):
        result = generate_choices(
            model, embedder, scene=beat["scene"], guidance=beat["guidance"], authored=beat["authored"], seed=index
        )
        passed += result.source == "generated"
    return passed / len(beats)


def run(quick: bool) -> dict[str, float]:
    embedder = default_embedder()
    model = default_model()
    figures = memory_figures(embedder, model, use_cases=3 if quick else 10)
    figures["hook_branch_accuracy"] = hook_branch_accuracy(embedder, model)
    figures["prompt_event_accuracy"] = prompt_event_accuracy(embedder)
    figures["choice_pair_pass_rate"] = choice_pair_pass_rate(embedder, model, 4 if quick else 10)
    return figures
