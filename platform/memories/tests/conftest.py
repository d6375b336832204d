"""Fixtures for memory tests: words hashed into embeddings instead of MiniLM, and tasks run in-process."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from accounts.models import User
from accounts.tests.factories import UserFactory
from inference.language.embedding import HashedWordsEmbedder
from memories import services
from moderation.tests.fixtures import tasks_run_inline
from worlds.models import Character
from worlds.tests.factories import CharacterFactory

__all__ = ["tasks_run_inline"]


@pytest.fixture(autouse=True)
def embedder(monkeypatch: pytest.MonkeyPatch) -> HashedWordsEmbedder:
    """The embedder every service uses here, the consolidation task's included: loading MiniLM would take
    seconds and test nothing the arithmetic around embeddings does not."""
    hashed = HashedWordsEmbedder()
    monkeypatch.setattr(services, "default_embedder", lambda: hashed)
    return hashed


@pytest.fixture(autouse=True)
def cache_emptied() -> None:
    """A rolled-back test hands its ids to the next one on SQLite; cached arrays must not outlive the test."""
    services.memory_arrays_cache.clear()


@pytest.fixture
def player() -> User:
    return UserFactory()


@pytest.fixture
def character() -> Character:
    return CharacterFactory(players_can_edit_memories=True)


@pytest.fixture
def tell(embedder: HashedWordsEmbedder) -> Callable[..., int]:
    """One exchange in which the player said `texts`, each remembered at importance 0.5 unless given."""

    def tell(character: Character, player: User, *texts: str, importance: float = 0.5) -> int:
        embeddings = embedder.embed(list(texts))  # (N, 384)
        memories = [(text, importance, embedding) for text, embedding in zip(texts, embeddings, strict=True)]
        return services.exchange_record(character=character, player=player, memories=memories)

    return tell


@pytest.fixture
def recall(embedder: HashedWordsEmbedder) -> Callable[..., services.Recall]:
    def recall(character: Character, player: User, question: str, **config: object) -> services.Recall:
        query: np.ndarray = embedder.embed([question])[0]  # (384,)
        return services.memories_recall(
            character=character, player=player, query=query, config=services.RetrievalConfig(**config)
        )

    return recall
