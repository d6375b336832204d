"""What a character remembers of the players it talks to, kept across sessions of the same world.

An `Acquaintance` is one character's relationship with one player (or, for a character whose memory is
shared by the whole world, with everyone at once: `player` is then None). It counts the turns of their
conversation, the clock that retrieval's recency and consolidation run on. Its `Memory` rows are what
inference.narrative.memory retrieves from: text, a 384-d unit embedding, importance, the turn that made them.

Embeddings are stored as raw float32 bytes rather than in pgvector or a JSON list: the same code runs on
SQLite and PostgreSQL, and `np.frombuffer` reads them for the exact scan without parsing anything.
"""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.db import models

from inference.language.embedding import EMBEDDING_DIMENSIONS
from inference.narrative.memory import EPISODIC, PINNED, SUMMARY
from worlds.models import Character, bounded_text

# Little-endian float32 on every machine, so a database written on one architecture reads on any other.
EMBEDDING_DTYPE = np.dtype("<f4")
EMBEDDING_BYTES = EMBEDDING_DIMENSIONS * EMBEDDING_DTYPE.itemsize
MEMORY_TEXT_MAX = 1000  # a few sentences: a memory is one statement, a summary at most four of them


class MemoryKind(models.TextChoices):
    PINNED = PINNED, "Pinned"  # always reaches the prompt
    EPISODIC = EPISODIC, "Episodic"  # extracted from one exchange; the first to go past the limit
    SUMMARY = SUMMARY, "Summary"  # a consolidation of a period's episodic memories


class MemoryScope(models.TextChoices):
    PLAYER = "player", "This player"
    WORLD = "world", "Everyone in the world"
    CHARACTER = "character", "The character itself"


class Acquaintance(models.Model):
    """A character's conversation with one player, or with everyone when its memory is world-wide."""

    character = models.ForeignKey(Character, on_delete=models.CASCADE, related_name="acquaintances")
    # None for a world-scoped character: one shared memory for every player.
    player = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="acquaintances"
    )
    turns = models.PositiveIntegerField(default=0)
    last_consolidated_turn = models.PositiveIntegerField(default=0)
    # Bumped by every write to its memories (memories.services): what recall's per-process cache is checked by.
    memories_version = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["character", "player"], name="acquaintance_once_per_player"),
            # NULLs are distinct in a unique constraint (SQLite and PostgreSQL alike): the shared row needs its own.
            models.UniqueConstraint(
                fields=["character"], condition=models.Q(player__isnull=True), name="acquaintance_once_per_world"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.character_id} and {self.player_id or 'everyone'}"


class Memory(models.Model):
    """One thing a character remembers: a pinned fact, an episodic memory or a summary."""

    # The eviction index below starts with the acquaintance, so a single-column index would be redundant.
    acquaintance = models.ForeignKey(Acquaintance, on_delete=models.CASCADE, related_name="memories", db_index=False)
    kind = models.CharField(max_length=8, choices=MemoryKind.choices, default=MemoryKind.EPISODIC)
    scope = models.CharField(max_length=9, choices=MemoryScope.choices, default=MemoryScope.PLAYER)
    text = bounded_text(max_length=MEMORY_TEXT_MAX)
    embedding = models.BinaryField(max_length=EMBEDDING_BYTES)  # (384,) float32 little-endian, a unit vector
    importance = models.FloatField()  # 0 to 1; pinned facts are 1
    turn = models.PositiveIntegerField()  # the acquaintance's turn that made it
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # The memory limit's eviction order within an acquaintance.
            models.Index(fields=["acquaintance", "kind", "importance", "turn"], name="memory_eviction"),
        ]

    def __str__(self) -> str:
        return self.text[:60]


def embedding_to_bytes(vector: np.ndarray) -> bytes:
    """The stored form of a (384,) embedding."""
    array = np.asarray(vector)
    if array.shape != (EMBEDDING_DIMENSIONS,):
        raise ValueError(f"an embedding has shape ({EMBEDDING_DIMENSIONS},), not {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("an embedding must be finite")
    return array.astype(EMBEDDING_DTYPE).tobytes()


def embeddings_from_bytes(blobs: list[bytes | memoryview]) -> np.ndarray:
    """(N, 384) float32 from stored embeddings, in one copy (PostgreSQL hands back memoryviews)."""
    if not blobs:
        return np.zeros((0, EMBEDDING_DIMENSIONS), dtype=np.float32)
    flat = np.frombuffer(b"".join(blobs), dtype=EMBEDDING_DTYPE)
    return flat.reshape(len(blobs), EMBEDDING_DIMENSIONS).astype(np.float32, copy=False)
