"""Writes and recall of character memories: exchanges recorded, recall for a prompt, players' own edits.

Recall is the hot path (every reply of every character), so each process keeps a (character, player)'s
memories as arrays between calls and checks them against the acquaintance's `memories_version`, read with
its turn in one indexed row lookup. Every write to memories goes through this module and bumps that version
in its transaction (`memories_changed`), so a stale cache is never used. An aggregate fingerprint (count,
newest id, newest change) would need no version, but it would scan the acquaintance's memory index on every
recall; the version is one row. The scan itself is the exact one of inference.narrative.memory.retrieve.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial

import numpy as np
from cachetools import LRUCache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F

from accounts.models import User
from inference.language.embedding import EMBEDDING_DIMENSIONS, Embedder, default_embedder
from inference.narrative import memory as narrative
from inference.narrative.memory import ConsolidationConfig, MemoryArrays, RetrievalConfig
from memories.models import (
    MEMORY_TEXT_MAX,
    Acquaintance,
    Memory,
    MemoryKind,
    MemoryScope,
    embedding_to_bytes,
    embeddings_from_bytes,
)
from worlds.models import Character
from worlds.models import MemoryScope as CharacterMemoryScope

# Frozen, so one instance serves as every call's default. The exchange that queues a consolidation and the
# task that runs it must agree on the period, so both read CONSOLIDATION.
RETRIEVAL = RetrievalConfig()
CONSOLIDATION = ConsolidationConfig()


def acquaintance_for(*, character: Character, player: User) -> Acquaintance | None:
    """The row a character's memories of `player` hang on, created on first use; None when it remembers nothing.

    A world-scoped character shares one row (player None) among every player of its world.
    """
    if character.memory_scope == CharacterMemoryScope.NONE:
        return None
    remembered = player if character.memory_scope == CharacterMemoryScope.PLAYER else None
    acquaintance, _ = Acquaintance.objects.get_or_create(character=character, player=remembered)
    return acquaintance


def acquaintance_locked(*, character: Character, player: User) -> Acquaintance | None:
    """acquaintance_for, locked for the rest of the caller's transaction."""
    acquaintance = acquaintance_for(character=character, player=player)
    if acquaintance is None:
        return None
    return Acquaintance.objects.select_for_update().get(pk=acquaintance.pk)


def memories_changed(*, acquaintance_id: int) -> None:
    """Every write to an acquaintance's memories calls this in its transaction: recall caches check it."""
    Acquaintance.objects.filter(pk=acquaintance_id).update(memories_version=F("memories_version") + 1)


def scope_of(acquaintance: Acquaintance) -> MemoryScope:
    return MemoryScope.PLAYER if acquaintance.player_id is not None else MemoryScope.WORLD


# Recall ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recall:
    """What a character recalls for one reply, and the turn of the conversation it recalls at."""

    turn: int
    memories: list[str]  # pinned first, then by retrieval score
    told: list[str]  # the others a question about the player may be answered from, by relevance


@dataclass(frozen=True)
class CachedMemories:
    version: int  # the acquaintance's memories_version the arrays were loaded at
    arrays: MemoryArrays
    texts: list[str]  # in the rows' order of `arrays`


class MemoryArraysCache:
    """The arrays of recently recalled acquaintances, least recently used out first, bounded by rows held."""

    # 100,000 rows of 384 float32 are about 150 MB: ten characters of 10,000 memories, or 500 at the default limit.
    def __init__(self, max_rows: int = 100_000) -> None:
        self.entries: LRUCache[int, CachedMemories] = LRUCache(
            maxsize=max_rows, getsizeof=lambda entry: max(len(entry.texts), 1)
        )
        # Pages and consumers run on several threads of one process; cachetools' caches are not thread-safe.
        self.lock = threading.Lock()

    def get(self, acquaintance_id: int) -> CachedMemories | None:
        with self.lock:
            return self.entries.get(acquaintance_id)

    def put(self, acquaintance_id: int, entry: CachedMemories) -> None:
        with self.lock:
            try:
                self.entries[acquaintance_id] = entry
            except ValueError:  # more rows than the whole cache holds: recalled from the database each time
                self.entries.pop(acquaintance_id, None)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


memory_arrays_cache = MemoryArraysCache()


def memories_loaded(acquaintance_id: int) -> tuple[MemoryArrays, list[str]]:
    """Every memory of an acquaintance as arrays for retrieval, with their texts in the same order."""
    rows = list(
        Memory.objects.filter(acquaintance_id=acquaintance_id)
        .order_by("turn", "id")
        .values_list("text", "importance", "turn", "kind", "embedding")
    )
    memories = [
        narrative.Memory(text=text, importance=importance, turn=turn, kind=kind)
        for text, importance, turn, kind, _ in rows
    ]
    embeddings = embeddings_from_bytes([row[4] for row in rows])  # (N, 384)
    return MemoryArrays.build(memories, embeddings), [memory.text for memory in memories]


def memories_recall(
    *, character: Character, player: User, query: np.ndarray, config: RetrievalConfig = RETRIEVAL
) -> Recall:
    """The memories for a prompt about `query` (384,): retrieve()'s choice, pinned first."""
    if query.shape != (EMBEDDING_DIMENSIONS,):
        raise ValueError(f"a query embedding has shape ({EMBEDDING_DIMENSIONS},), not {query.shape}")
    if character.memory_scope == CharacterMemoryScope.NONE:
        return Recall(turn=0, memories=[], told=[])
    remembered = player if character.memory_scope == CharacterMemoryScope.PLAYER else None
    state = (
        Acquaintance.objects.filter(character=character, player=remembered)
        .values("id", "turns", "memories_version")
        .first()
    )
    if state is None:
        return Recall(turn=0, memories=[], told=[])
    cached = memory_arrays_cache.get(state["id"])
    # Loaded after the version was read, so the rows are at least that new; a write in between only makes
    # the next recall load them again.
    if cached is None or cached.version != state["memories_version"]:
        arrays, texts = memories_loaded(state["id"])
        cached = CachedMemories(version=state["memories_version"], arrays=arrays, texts=texts)
        memory_arrays_cache.put(state["id"], cached)
    chosen = narrative.retrieve(cached.arrays, query, state["turns"], config)
    pool = narrative.retrieve(cached.arrays, query, state["turns"], narrative.RECOLLECTION_RETRIEVAL)
    return Recall(
        turn=state["turns"],
        memories=[cached.texts[index] for index in chosen],
        told=[cached.texts[index] for index in pool if index not in chosen],
    )


# Exchanges and consolidation ------------------------------------------------------------------------------


def text_clipped(text: str) -> str:
    """A memory text within the stored bound: a player may say a very long sentence, and the exchange must
    still be recorded, so it is cut at a word before the bound rather than refused."""
    text = " ".join(text.split())
    if len(text) <= MEMORY_TEXT_MAX:
        return text
    return text[: MEMORY_TEXT_MAX - 1].rsplit(" ", 1)[0] + "…"


@transaction.atomic
def exchange_record(*, character: Character, player: User, memories: list[tuple[str, float, np.ndarray]]) -> int:
    """Count one more turn of the conversation and store its episodic memories (text, importance, embedding
    (384,)) at that turn. Returns the new turn; 0 for a character that remembers nothing.

    Past the character's memory limit the least important episodic memories go, the oldest first among
    equals; pinned facts and summaries are never dropped. When a period ends, its consolidation is queued.
    """
    from memories.tasks import memories_consolidate  # tasks import this module

    acquaintance = acquaintance_locked(character=character, player=player)
    if acquaintance is None:
        return 0
    acquaintance.turns += 1
    acquaintance.memories_version += 1  # locked, so no F() is needed; the limit's deletions are covered too
    acquaintance.save(update_fields=["turns", "memories_version"])
    scope = scope_of(acquaintance)
    Memory.objects.bulk_create(
        [
            Memory(
                acquaintance=acquaintance,
                kind=MemoryKind.EPISODIC,
                scope=scope,
                text=text_clipped(text),
                embedding=embedding_to_bytes(embedding),
                importance=min(max(float(importance), 0.0), 1.0),
                turn=acquaintance.turns,
            )
            for text, importance, embedding in memories
            if text.strip()
        ]
    )
    memories_limit(acquaintance=acquaintance, limit=character.memory_limit)
    if narrative.consolidation_due(acquaintance.turns, acquaintance.last_consolidated_turn, CONSOLIDATION):
        transaction.on_commit(partial(memories_consolidate.delay, acquaintance.pk))
    return acquaintance.turns


def memories_limit(*, acquaintance: Acquaintance, limit: int) -> int:
    """Drop episodic memories beyond `limit` memories in all; returns how many went."""
    excess = Memory.objects.filter(acquaintance=acquaintance).count() - limit
    if excess <= 0:
        return 0
    doomed = list(
        Memory.objects.filter(acquaintance=acquaintance, kind=MemoryKind.EPISODIC)
        .order_by("importance", "turn", "id")
        .values_list("id", flat=True)[:excess]
    )
    Memory.objects.filter(id__in=doomed).delete()
    return len(doomed)


def acquaintance_consolidate(
    *, acquaintance_id: int, config: ConsolidationConfig = CONSOLIDATION, embedder: Embedder | None = None
) -> Memory | None:
    """One summary of the episodic memories since the last consolidation, if one is due; None otherwise.

    Idempotent: the due check runs again under the acquaintance's lock, so a task delivered twice (acks are
    late) makes one summary.
    """
    # Loaded before the lock: the first load of MiniLM takes seconds that no exchange should wait for.
    embedder = embedder or default_embedder()
    with transaction.atomic():
        acquaintance = Acquaintance.objects.select_for_update().filter(pk=acquaintance_id).first()
        if acquaintance is None:  # deleted with its character or player while the task waited
            return None
        if not narrative.consolidation_due(acquaintance.turns, acquaintance.last_consolidated_turn, config):
            return None
        period = [
            narrative.Memory(text=text, importance=importance, turn=turn, kind=kind)
            for text, importance, turn, kind in Memory.objects.filter(
                acquaintance=acquaintance, kind=MemoryKind.EPISODIC, turn__gt=acquaintance.last_consolidated_turn
            )
            .order_by("turn", "id")
            .values_list("text", "importance", "turn", "kind")
        ]
        summary = narrative.consolidate(period, acquaintance.last_consolidated_turn, acquaintance.turns, config)
        acquaintance.last_consolidated_turn = acquaintance.turns
        acquaintance.memories_version += 1
        acquaintance.save(update_fields=["last_consolidated_turn", "memories_version"])
        if summary is None:
            return None
        text = text_clipped(summary.text)
        return Memory.objects.create(
            acquaintance=acquaintance,
            kind=MemoryKind.SUMMARY,
            scope=scope_of(acquaintance),
            text=text,
            embedding=embedding_to_bytes(embedder.embed([text])[0]),
            importance=summary.importance,
            turn=summary.turn,
        )


# What players do with the memories a character holds of them ---------------------------------------------


def memories_viewable_check(*, character: Character) -> None:
    if not character.players_can_view_memories:
        raise PermissionDenied(f"{character.name}'s creator keeps what {character.name} remembers private.")


def memories_editable_check(*, character: Character) -> None:
    memories_viewable_check(character=character)
    if not character.players_can_edit_memories:
        raise PermissionDenied(f"{character.name}'s creator does not let players change what it remembers.")


def memory_owned_check(*, player: User, memory: Memory) -> None:
    """The memory is one the character holds of this player alone: shared world memories hold what other
    players said, so no single player may see or change them here."""
    if memory.acquaintance.player_id != player.pk:
        raise PermissionDenied("That memory is not one of yours.")
    memories_editable_check(character=memory.acquaintance.character)


def text_cleaned(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise ValidationError({"text": "A memory needs some text."})
    if len(text) > MEMORY_TEXT_MAX:
        raise ValidationError({"text": f"A memory is at most {MEMORY_TEXT_MAX} characters; this one has {len(text)}."})
    return text


@transaction.atomic
def memory_pin(*, player: User, memory: Memory, pinned: bool) -> Memory:
    """Pin a memory (it then always reaches the prompt) or unpin it back into an episodic one."""
    memory_owned_check(player=player, memory=memory)
    memory.kind = MemoryKind.PINNED if pinned else MemoryKind.EPISODIC
    memory.importance = 1.0 if pinned else narrative.importance_of(memory.text)
    memory.save(update_fields=["kind", "importance", "updated_at"])
    memories_changed(acquaintance_id=memory.acquaintance_id)
    return memory


@transaction.atomic
def memory_edit(*, player: User, memory: Memory, text: str, embedder: Embedder | None = None) -> Memory:
    """Change a memory's words; its embedding follows them, so recall finds it by what it now says."""
    memory_owned_check(player=player, memory=memory)
    memory.text = text_cleaned(text)
    memory.embedding = embedding_to_bytes((embedder or default_embedder()).embed([memory.text])[0])
    if memory.kind != MemoryKind.PINNED:
        memory.importance = narrative.importance_of(memory.text)
    memory.save(update_fields=["text", "embedding", "importance", "updated_at"])
    memories_changed(acquaintance_id=memory.acquaintance_id)
    return memory


@transaction.atomic
def memory_delete(*, player: User, memory: Memory) -> None:
    memory_owned_check(player=player, memory=memory)
    memory.delete()
    memories_changed(acquaintance_id=memory.acquaintance_id)


@transaction.atomic
def memory_add_pinned(*, character: Character, player: User, text: str, embedder: Embedder | None = None) -> Memory:
    """A fact the player wants the character always to remember about them."""
    memories_editable_check(character=character)
    if character.memory_scope != CharacterMemoryScope.PLAYER:
        raise PermissionDenied(f"{character.name} does not keep memories of each player separately.")
    text = text_cleaned(text)
    embedding = (embedder or default_embedder()).embed([text])[0]
    acquaintance = acquaintance_locked(character=character, player=player)
    memories_changed(acquaintance_id=acquaintance.pk)
    return Memory.objects.create(
        acquaintance=acquaintance,
        kind=MemoryKind.PINNED,
        scope=MemoryScope.PLAYER,
        text=text,
        embedding=embedding_to_bytes(embedding),
        importance=1.0,
        turn=acquaintance.turns,
    )
