"""The narrative engine's quality on two parts of every evaluation set: the part thresholds and prompts were
tuned on (tests/data/narrative/*.json, reported with a `_tuning` suffix) and a part nobody looks at while
tuning (tests/data/narrative/untouched/, the headline figure). Replies come from the real play path:
`Narrator.reply` with the default language model and MiniLM, over a link that keeps memories as the
platform does (extracted from each exchange, consolidated every 20 turns, retrieved by relevance, recency
and importance).

- memory_use_rate: replies to questions that ask for something the player told earlier (forty turns of
  other talk in between) that contain every expected word: the 40-turn conversations with each demo
  character, and the memory cases (a fact, forty lines of filler, an indirect question). Target 0.9.
- false_recollection_rate: the memory cases asked with another case's fact told in its place, so that
  nothing the player said answers the question: the share of them a character answers by stating a
  recalled sentence (the recollection that opens a reply) that is not that other fact. Lower is better: a
  character who does not know should not say a wrong memory as if it were one. No target in the issue.
- reply_in_character_rate: replies in the conversations that the automatic checks pass: every sentence
  passes the reply checks (no other script, no web or assistant talk, no repeat of the last reply) and the
  reply is the model's own, not a creator's line put in for a failed one. Whether a reply is on topic is
  a reader's call (MiniLM scores a good "Most evenings; it rolls in off the causeway" to "Is the fog
  always this thick?" below nonsense): read the transcripts; a reader's verdict is the target (0.8).
- hook_branch_accuracy: inputs that mean a branch, classified into it. Target 0.85.
- hook_fallback_accuracy: inputs that fit no branch, left to the fallback. Target 0.8.
- prompt_event_accuracy: typed prompts whose world events (kind and object) equal the expected ones, [] for
  questions, talk and negations that ask for nothing. Target 0.9.
- choice_pair_pass_rate: beats whose two choices are both generated and pass every check of
  `pair_problems`, each leading where its authored choice leads; an authored choice kept in place of a
  failed rewrite is not a pass. Target 0.8.

Every reply and choice pair scored is written verbatim to bench/results/narrative_eval_transcripts.md.
--quick (CI) plays the first conversation of each part without its small talk, three memory cases and four
beats; hooks and world prompts always run whole. The two parts run side by side, a process each.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.gallery_speed import django_ready
from inference.language.base import LanguageModel, Message
from inference.language.embedding import Embedder, default_embedder
from inference.narrative.choices import generate_choices, pair_problems
from inference.narrative.hooks import Branch, BranchClassifier
from inference.narrative.memory import (
    RECOLLECTION_RETRIEVAL,
    ConsolidationConfig,
    Memory,
    MemoryArrays,
    RetrievalConfig,
    consolidate,
    consolidation_due,
    retrieve,
)
from inference.narrative.recollection import Recollection, recollect, sentences_of
from inference.narrative.setting import Setting
from inference.narrative.world_prompts import WorldPromptClassifier
from inference.play.host import Job
from inference.play.narrator import Narrator
from inference.play.state_machine import CONVERSATION_MESSAGES_KEPT
from inference.protocol import SessionCharacterLine, SessionExchange, SessionRecalled, ToldMemory, WorkerToPlatform

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "narrative"
DEMO = Path(__file__).resolve().parents[1] / "worlds" / "demo_content"
RESULTS = Path(__file__).resolve().parent / "results"
PARTS = {"": DATA / "untouched", "_tuning": DATA}
FILLER_TURNS = 40
ON_TOPIC_COSINE = 0.15


def default_model() -> LanguageModel:
    """The platform's default local model, loaded as a worker loads it, on one torch thread."""
    from inference.worker import language_model_loader, torch_threads_set

    torch_threads_set(1)
    load = language_model_loader("local", "cpu", threads=1)
    assert load is not None
    return load()


def load(directory: Path, name: str) -> dict[str, Any]:
    return json.loads((directory / name).read_text())


class RememberingLink:
    """A `PlatformLink` for one player that keeps that player's memories as the platform does and activates
    the world's lore with the platform's own selector."""

    def __init__(self, embedder: Embedder, document: dict[str, Any], character: str) -> None:
        self.embedder = embedder
        self.document = document
        self.character = character
        self.memories: list[Memory] = []
        self.embeddings: list[np.ndarray] = []
        self.turns = 0
        self.last_consolidated = 0
        self.lines: list[str] = []
        self.first_line_at: float | None = None

    def send(self, message: WorkerToPlatform) -> None:
        if isinstance(message, SessionCharacterLine) and message.text:
            self.lines.append(message.text)
            if self.first_line_at is None:
                self.first_line_at = time.perf_counter()
        if isinstance(message, SessionExchange):
            self.turn_remember(message.memories)

    def turn_remember(self, told_memories: list[ToldMemory]) -> None:
        """A turn over, with what the player told the character in it; consolidated every so many turns."""
        self.turns += 1
        for told in told_memories:
            vector = np.frombuffer(told.embedding, dtype="<f4")
            self.remember(Memory(told.text, told.importance, self.turns), vector)
        config = ConsolidationConfig()
        if consolidation_due(self.turns, self.last_consolidated, config):
            summary = consolidate(self.memories, self.last_consolidated, self.turns, config)
            self.last_consolidated = self.turns
            if summary is not None:
                self.remember(summary, self.embedder.embed([summary.text])[0])

    def remember(self, memory: Memory, vector: np.ndarray) -> None:
        self.memories.append(memory)
        self.embeddings.append(vector)

    def recall(
        self, *, session: str, character: int | None, speaker: str | None, query: bytes, recent: list[str]
    ) -> SessionRecalled:
        from play.selectors import lore_in_document

        lore = lore_in_document(document=self.document, character_name=self.character, recent=recent)
        chosen: list[int] = []
        pool: list[int] = []
        if self.memories:
            arrays = MemoryArrays.build(self.memories, np.stack(self.embeddings))
            vector = np.frombuffer(query, dtype="<f4")  # (D,)
            chosen = retrieve(arrays, vector, self.turns, RetrievalConfig())
            pool = retrieve(arrays, vector, self.turns, RECOLLECTION_RETRIEVAL)
        memories = [self.memories[index].text for index in chosen]
        told = [self.memories[index].text for index in pool if index not in chosen]
        return SessionRecalled(session=session, request=1, turn=self.turns, memories=memories, told=told, lore=lore)

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None:
        pass


class RememberedEmbedder:
    """An embedder that embeds each text once: the memory cases tell the same filler lines over and over."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.vectors: dict[str, np.ndarray] = {}  # text -> (D,)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        new = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if new:
            self.vectors.update(zip(new, self.inner.embed(new), strict=True))
        if not texts:
            return self.inner.embed(texts)
        return np.stack([self.vectors[text] for text in texts])  # (N, D)


@dataclass
class Scored:
    """Counts of one figure and the transcript lines behind it."""

    passed: int = 0
    total: int = 0
    transcript: list[str] = field(default_factory=list)

    def add(self, passed: bool, line: str) -> None:
        self.passed += passed
        self.total += 1
        self.transcript.append(f"{'PASS' if passed else 'FAIL'}  {line}")

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


def demo_document(world: str) -> dict[str, Any]:
    return json.loads((DEMO / f"{world}.json").read_text())


def demo_setting(world: str, player_name: str) -> Setting:
    """A demo world's narrative setting, as the platform sends it in a session's open message."""
    document = demo_document(world)
    return Setting.from_message(
        {
            "title": document["world"].get("title", ""),
            "description": document["world"].get("description", ""),
            "world_rules": document["world"].get("world_rules", ""),
            "player_name": player_name,
            "content_rating": document["world"].get("content_rating", "everyone"),
            "characters": [character | {"id": index} for index, character in enumerate(document["characters"])],
            "hooks": document.get("hooks", []),
        }
    )


class Conversation:
    """A player talking to one character through `Narrator.reply`, turn after turn."""

    def __init__(self, narrator: Narrator, world: str, player_name: str, character: str) -> None:
        self.narrator = narrator
        self.setting = demo_setting(world, player_name)
        self.member = self.setting.cast[character]
        self.link = RememberingLink(narrator.embedder, demo_document(world), character)
        self.history: list[Message] = []
        self.sequence = 0
        self.fallbacks: list[str] = []

    def say(self, text: str) -> str:
        self.sequence += 1
        self.link.lines = []
        job = Job(
            "reply",
            "evaluation",
            self.setting,
            {
                "character": self.member,
                "text": text,
                "sequence": self.sequence,
                "speaker": None,
                "history": self.history[-CONVERSATION_MESSAGES_KEPT:],  # what a session keeps
                "beat": None,
                "flags": [],
                "revealed_clues": [],
            },
        )
        self.narrator.reply(job, self.link)
        reply = " ".join(self.link.lines)
        self.history = [*self.history, {"role": "user", "content": text}, {"role": "assistant", "content": reply}]
        return reply

    def tell(self, text: str) -> None:
        """A line the player says that only matters for memory: it is remembered without a reply."""
        self.link.turn_remember(self.narrator.told_memories(text))


def earlier_replies(history: list[Message]) -> list[str]:
    """The replies before the last that the worker still holds (it keeps CONVERSATION_MESSAGES_KEPT messages)."""
    kept = history[-CONVERSATION_MESSAGES_KEPT:]
    return [message["content"] for message in kept if message["role"] == "assistant"][:-1]


def contains_all(reply: str, words: list[str]) -> bool:
    return all(word.lower() in reply.lower() for word in words)


def conversation_figures(
    narrator: Narrator, directory: Path, quick: bool
) -> tuple[Scored, Scored, list[str], list[float]]:
    """(memory use, in character, transcript, first-line seconds) over the part's 40-turn conversations."""
    from inference.narrative.reply_checks import ReplyContext, identity_stems_of, sentence_problems

    memory, character = Scored(), Scored()
    transcript: list[str] = []
    first_line_seconds: list[float] = []
    conversations = load(directory, "conversations.json")["conversations"]
    for case in conversations[:1] if quick else conversations:
        talk = Conversation(narrator, case["world"], case["player_name"], case["character"])
        setting = talk.setting
        sheet = talk.member.sheet
        identity = identity_stems_of([sheet.name, sheet.persona, sheet.personality])
        transcript.append(f"\n### {case['character']} ({case['world']}) and {case['player_name']}\n")
        # Quick: the introductions and the questions that ask for them back, without the talk in between.
        turns = [turn for index, turn in enumerate(case["turns"]) if not quick or index < 3 or turn["expect_words"]]
        for turn in turns:
            last_reply = talk.history[-1]["content"] if talk.history else ""
            started = time.perf_counter()
            talk.link.first_line_at = None
            reply = talk.say(turn["say"])
            if talk.link.first_line_at is not None:
                first_line_seconds.append(talk.link.first_line_at - started)
            transcript += [f"- **{case['player_name']}:** {turn['say']}", f"  **{case['character']}:** {reply}"]
            if turn["expect_words"]:
                memory.add(contains_all(reply, turn["expect_words"]), f"{turn['say']} -> {reply}")
            context = ReplyContext(
                world_words=setting.world_words,
                last_reply=last_reply,
                player_name=case["player_name"],
                earlier_replies=earlier_replies(talk.history[:-2]),
                identity=identity,
            )
            own = reply not in {line for line in creator_lines_of(talk)}
            checked = all(not sentence_problems(sentence, context) for sentence in talk.link.lines)
            character.add(own and checked, f"{turn['say']} -> {reply}")
    return memory, character, transcript, first_line_seconds


def creator_lines_of(talk: Conversation) -> list[str]:
    from inference.narrative.reply_checks import creator_lines

    return creator_lines(
        name=talk.member.sheet.name,
        greeting=talk.member.greeting,
        example_dialogue=talk.member.sheet.example_dialogue,
        player_name=talk.setting.player_name,
    )


def memory_case_figures(narrator: Narrator, directory: Path, cases_count: int | None) -> Scored:
    """The memory cases: the fact told at turn 1, forty lines of filler, then the question, asked of Eve."""
    data = load(directory, "memory.json")
    scored = Scored()
    for offset, case in enumerate(data["cases"][:cases_count]):
        talk = Conversation(narrator, "dark-lighthouse", "traveller", "Eve")
        talk.tell(case["fact"])
        for turn in range(FILLER_TURNS):
            talk.tell(data["filler"][(offset * 7 + turn) % len(data["filler"])])
        reply = talk.say(case["question"])
        scored.add(contains_all(reply, case["answer_words"]), f"{case['fact']} / {case['question']} -> {reply}")
    return scored


def false_recollection_figures(narrator: Narrator, directory: Path, cases_count: int | None) -> Scored:
    """The memory cases with the fact of the case half the list away told instead of their own, so the
    question has no answer among what the player said: passed when no recollection is stated, or one of that
    other fact (a question may fit it, "what's my dog called?" to another player's dog)."""
    data = load(directory, "memory.json")
    cases = data["cases"][:cases_count]
    scored = Scored()
    for offset, case in enumerate(cases):
        other = cases[(offset + len(cases) // 2) % len(cases)]
        found = told_then_recollected(narrator, data, offset, other["fact"], case["question"])
        false = found is not None and found.sentence not in sentences_of([other["fact"]])
        stated = found.statement if found is not None else "(no recollection)"
        scored.add(not false, f"told {other['fact']!r}; asked {case['question']!r} -> {stated}")
    return scored


def told_then_recollected(
    narrator: Narrator, data: dict[str, Any], offset: int, fact: str, question: str
) -> Recollection | None:
    """What the recollection states for `question` after `fact` and forty lines of the case's filler."""
    talk = Conversation(narrator, "dark-lighthouse", "traveller", "Eve")
    talk.tell(fact)
    for turn in range(FILLER_TURNS):
        talk.tell(data["filler"][(offset * 7 + turn) % len(data["filler"])])
    return recollected(talk.link, narrator.embedder, question)


def recollected(link: RememberingLink, embedder: Embedder, question: str, previous: str = "") -> Recollection | None:
    query = embedder.embed([question])[0]  # (D,)
    recalled = link.recall(
        session="evaluation", character=None, speaker=None, query=query.astype("<f4").tobytes(), recent=[]
    )
    return recollect(question, query, [*recalled.memories, *recalled.told], embedder, previous=previous)


def recollection_figures(suffix: str) -> dict[str, float]:
    """The recollection alone, with no language model (half a minute a part), for tuning it: the share of
    memory cases and of the conversations' memory questions whose stated recollection holds every expected
    word, and the share of each that states a wrong one (for a case: with another case's fact told instead)."""
    embedder = RememberedEmbedder(default_embedder())
    narrator = Narrator(embedder, None)  # remembering needs no model
    directory = PARTS[suffix]
    data = load(directory, "memory.json")
    cases = data["cases"]
    answered = wrong = 0
    for offset, case in enumerate(cases):
        found = told_then_recollected(narrator, data, offset, case["fact"], case["question"])
        answered += found is not None and contains_all(found.statement, case["answer_words"])
        other = cases[(offset + len(cases) // 2) % len(cases)]
        found = told_then_recollected(narrator, data, offset, other["fact"], case["question"])
        wrong += found is not None and found.sentence not in sentences_of([other["fact"]])
    asked = talk_answered = talk_wrong = 0
    for talk in load(directory, "conversations.json")["conversations"]:
        link = RememberingLink(embedder, demo_document(talk["world"]), talk["character"])
        previous = ""
        for turn in talk["turns"]:
            if turn["expect_words"]:
                found = recollected(link, embedder, turn["say"], previous)
                right = found is not None and contains_all(found.statement, turn["expect_words"])
                asked, talk_answered, talk_wrong = (
                    asked + 1,
                    talk_answered + right,
                    talk_wrong + (found is not None and not right),
                )
            link.turn_remember(narrator.told_memories(turn["say"]))
            previous = turn["say"]
    return {
        f"recollection_cases_answered{suffix}": answered / max(len(cases), 1),
        f"recollection_cases_wrong_when_untold{suffix}": wrong / max(len(cases), 1),
        f"recollection_conversations_answered{suffix}": talk_answered / max(asked, 1),
        f"recollection_conversations_wrong{suffix}": talk_wrong / max(asked, 1),
    }


if __name__ == "__main__":
    # python -m bench.narrative_quality: the recollection alone on the tuning part (tune on this one only).
    django_ready()
    for key, value in recollection_figures("_tuning").items():
        print(f"{key:48s} {value:.3f}")


def hook_figures(embedder: Embedder, model: LanguageModel, directory: Path) -> tuple[Scored, Scored]:
    branch, fallback = Scored(), Scored()
    for hook in load(directory, "hooks.json")["hooks"]:
        branches = [Branch(item["name"], item["intent"], tuple(item["examples"])) for item in hook["branches"]]
        classifier = BranchClassifier(branches, embedder, language_model=model, presentation=hook["presentation"])
        for item in hook["inputs"]:
            found = classifier.classify(item["text"]).branch
            scored = fallback if item["branch"] is None else branch
            scored.add(found == item["branch"], f"{hook['name']}: {item['text']} -> {found} (want {item['branch']})")
    return branch, fallback


def labelled(event: dict[str, Any]) -> tuple[str, str | None]:
    """An event as the labels name it: a spawn with its object; a clear without the weather it ends, which the
    labels leave out ("no more snow" is a clear)."""
    return event["kind"], event.get("object") if event["kind"] == "spawn" else None


def prompt_figures(embedder: Embedder, directory: Path) -> Scored:
    classifier = WorldPromptClassifier(embedder)
    scored = Scored()
    for case in load(directory, "world_prompts.json")["cases"]:
        found = [labelled(event) for event in classifier.events(case["prompt"])]
        expected = [labelled(event) for event in case["events"]]
        scored.add(found == expected, f"{case['prompt']} -> {found} (want {expected})")
    return scored


def choice_figures(embedder: Embedder, model: LanguageModel, directory: Path, quick: bool) -> Scored:
    beats = load(directory, "choices.json")["beats"]
    scored = Scored()
    for index, beat in enumerate(beats[:4] if quick else beats):
        result = generate_choices(
            model, embedder, scene=beat["scene"], guidance=beat["guidance"], authored=beat["authored"], seed=index
        )
        problems = ["fell back to the authored choices"] if result.source != "generated" else []
        problems += pair_problems(result.choices, beat, embedder)
        pair = " | ".join(f"{choice['text']} -> {choice['to']}" for choice in result.choices)
        scored.add(not problems, f"{beat['scene'][:60]}…: {pair} {problems or ''}")
    return scored


def part_figures(suffix: str, quick: bool) -> tuple[dict[str, float], list[str], list[float]]:
    """One part's figures (keys with `suffix`), its transcript sections and its first-line seconds, with the
    models loaded in this process."""
    django_ready()  # lore is activated by the platform's own selector
    embedder = RememberedEmbedder(default_embedder())
    model = default_model()
    narrator = Narrator(embedder, lambda: model)
    directory = PARTS[suffix]
    part = "untouched" if not suffix else "tuning"
    memory, character, transcript, seconds = conversation_figures(narrator, directory, quick)
    cases = memory_case_figures(narrator, directory, 3 if quick else None)
    unanswerable = false_recollection_figures(narrator, directory, 3 if quick else None)
    branch, fallback = hook_figures(embedder, model, directory)
    prompts = prompt_figures(embedder, directory)
    choices = choice_figures(embedder, model, directory, quick)
    figures = {
        f"memory_use_rate{suffix}": (memory.passed + cases.passed) / max(memory.total + cases.total, 1),
        f"false_recollection_rate{suffix}": 1.0 - unanswerable.rate,
        f"reply_in_character_rate{suffix}": character.rate,
        f"hook_branch_accuracy{suffix}": branch.rate,
        f"hook_fallback_accuracy{suffix}": fallback.rate,
        f"prompt_event_accuracy{suffix}": prompts.rate,
        f"choice_pair_pass_rate{suffix}": choices.rate,
    }
    sections = [f"\n## The {part} part\n", "\n### Conversations", *transcript]
    for title, scored in (
        ("Memory: conversations", memory),
        ("Memory: cases", cases),
        ("Memory: no answer told (FAIL: a false recollection stated)", unanswerable),
        ("In character", character),
        ("Hooks: branches", branch),
        ("Hooks: no branch", fallback),
        ("World prompts", prompts),
        ("Choice pairs", choices),
    ):
        sections += [f"\n### {title}: {scored.passed} of {scored.total}\n", *scored.transcript]
    return figures, sections, seconds


def run(quick: bool) -> dict[str, float]:
    # The parts are independent and each runs on one torch thread, so they run side by side, a process each.
    workers = max(1, min(len(PARTS), os.cpu_count() or 1))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(pool.map(part_figures, PARTS, [quick] * len(PARTS)))
    figures: dict[str, float] = {}
    sections: list[str] = ["# Narrative evaluation transcripts\n"]
    first_line_seconds: list[float] = []
    for found, part_sections, seconds in parts:
        figures |= found
        sections += part_sections
        first_line_seconds += seconds
    if first_line_seconds:
        figures["reply_first_line_ms_p50_eval"] = float(np.median(first_line_seconds) * 1000)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "narrative_eval_transcripts.md").write_text("\n".join(sections) + "\n")
    return figures
