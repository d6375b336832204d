from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from accounts.models import User
from accounts.tests.factories import UserFactory
from inference.language.embedding import EMBEDDING_DIMENSIONS, HashedWordsEmbedder
from memories import services
from memories.models import Acquaintance, Memory, MemoryKind, MemoryScope, embedding_to_bytes
from worlds.models import Character
from worlds.tests.factories import CharacterFactory

pytestmark = pytest.mark.django_db

FACT = "I found a silver key at the docks."
FILLER = [
    f"My {thing} is {colour} and I keep it near the {place}."
    for thing in ("coat", "boat", "lamp", "dog", "hat", "rope", "cart", "bell")
    for colour in ("red", "green", "grey", "blue", "black")
    for place in ("mill", "inn", "church", "market", "bridge")
]


def test_recall_picks_the_fact_a_question_is_about_among_many(
    player: User, tell: Callable[..., int], recall: Callable[..., services.Recall]
) -> None:
    character = CharacterFactory(memory_limit=len(FILLER) + 1)
    tell(character, player, FACT)
    for line in FILLER:
        tell(character, player, line)
    recalled = recall(character, player, "What did I find at the docks?", limit=5, token_budget=10_000)
    assert recalled.turn == len(FILLER) + 1
    assert FACT in recalled.memories
    assert len(recalled.memories) == 5


def test_pinned_memories_come_first_whatever_the_question(
    character: Character,
    player: User,
    tell: Callable[..., int],
    recall: Callable[..., services.Recall],
    embedder: HashedWordsEmbedder,
) -> None:
    tell(character, player, FACT, "My sister Ada sails the northern route.")
    pinned = services.memory_add_pinned(character=character, player=player, text="Call me Captain.", embedder=embedder)
    recalled = recall(character, player, "Where is the silver key?")
    assert recalled.memories[0] == pinned.text
    assert FACT in recalled.memories[1:]


def test_a_player_scoped_character_keeps_each_player_apart(
    character: Character, player: User, tell: Callable[..., int], recall: Callable[..., services.Recall]
) -> None:
    other = UserFactory()
    tell(character, player, FACT)
    assert recall(character, other, "What did I find at the docks?").memories == []
    assert recall(character, player, "What did I find at the docks?").memories == [FACT]


def test_a_world_scoped_character_shares_one_memory_among_players(
    player: User, tell: Callable[..., int], recall: Callable[..., services.Recall]
) -> None:
    character = CharacterFactory(memory_scope="world")
    other = UserFactory()
    assert tell(character, player, FACT) == 1
    assert tell(character, other, "The lighthouse lamp is broken tonight.") == 2
    recalled = recall(character, other, "What did someone find at the docks?")
    assert recalled.turn == 2
    assert FACT in recalled.memories
    acquaintance = Acquaintance.objects.get(character=character)
    assert acquaintance.player is None
    assert set(acquaintance.memories.values_list("scope", flat=True)) == {MemoryScope.WORLD}


def test_a_character_that_remembers_nothing_stores_nothing(
    player: User, tell: Callable[..., int], recall: Callable[..., services.Recall]
) -> None:
    character = CharacterFactory(memory_scope="none")
    assert tell(character, player, FACT) == 0
    assert not Acquaintance.objects.exists()
    assert not Memory.objects.exists()
    assert recall(character, player, "What did I find at the docks?") == services.Recall(turn=0, memories=[], told=[])


def test_recall_sees_memories_added_edited_and_deleted_after_it_cached_them(
    character: Character,
    player: User,
    tell: Callable[..., int],
    recall: Callable[..., services.Recall],
    embedder: HashedWordsEmbedder,
) -> None:
    tell(character, player, "The red lantern hangs in the chapel.")
    assert recall(character, player, "Where did I find the key?").memories == ["The red lantern hangs in the chapel."]
    tell(character, player, FACT)
    assert FACT in recall(character, player, "Where did I find the key?").memories
    memory = Memory.objects.get(text=FACT)
    services.memory_edit(player=player, memory=memory, text="I found a copper coin at the docks.", embedder=embedder)
    assert "I found a copper coin at the docks." in recall(character, player, "Where did I find the coin?").memories
    lantern = Memory.objects.get(text="The red lantern hangs in the chapel.")
    services.memory_pin(player=player, memory=lantern, pinned=True)
    assert recall(character, player, "Where did I find the coin?").memories[0] == lantern.text
    services.memory_delete(player=player, memory=memory)
    assert recall(character, player, "Where did I find the coin?").memories == [lantern.text]


def test_a_repeated_recall_costs_one_query(
    character: Character,
    player: User,
    tell: Callable[..., int],
    recall: Callable[..., services.Recall],
    django_assert_num_queries: Any,
) -> None:
    tell(character, player, FACT)
    recall(character, player, "What did I find at the docks?")
    with django_assert_num_queries(1):
        assert recall(character, player, "What did I find at the docks?").memories == [FACT]


def test_the_limit_drops_the_least_important_episodic_memories_first_never_pinned_or_summaries(
    player: User, tell: Callable[..., int], embedder: HashedWordsEmbedder
) -> None:
    character = CharacterFactory(memory_limit=4, players_can_edit_memories=True)
    acquaintance = services.acquaintance_for(character=character, player=player)
    services.memory_add_pinned(character=character, player=player, text="Call me Captain.", embedder=embedder)
    Memory.objects.create(
        acquaintance=acquaintance,
        kind=MemoryKind.SUMMARY,
        text="An old summary.",
        importance=0.1,
        turn=0,
        embedding=embedding_to_bytes(embedder.embed(["An old summary."])[0]),
    )
    tell(character, player, "A dull remark about weather.", importance=0.2)
    tell(character, player, "My brother Tom lives in Saltmarsh.", importance=0.9)
    tell(character, player, "Another dull remark.", importance=0.2)
    tell(character, player, "I buried the map under the old oak.", importance=0.9)
    kept = set(Memory.objects.values_list("text", flat=True))
    assert kept == {
        "Call me Captain.",
        "An old summary.",
        "My brother Tom lives in Saltmarsh.",
        "I buried the map under the old oak.",
    }


def test_the_limit_drops_the_oldest_among_equally_important_memories(player: User, tell: Callable[..., int]) -> None:
    character = CharacterFactory(memory_limit=2)
    for line in ("The first remark.", "The second remark.", "The third remark."):
        tell(character, player, line, importance=0.5)
    assert set(Memory.objects.values_list("text", flat=True)) == {"The second remark.", "The third remark."}


def test_recall_over_ten_thousand_memories_finds_the_fact(
    character: Character, player: User, recall: Callable[..., services.Recall], embedder: HashedWordsEmbedder
) -> None:
    acquaintance = services.acquaintance_for(character=character, player=player)
    generator = np.random.default_rng(0)
    noise = generator.standard_normal((10_000, EMBEDDING_DIMENSIONS)).astype(np.float32)  # (10000, 384)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    Memory.objects.bulk_create(
        [
            Memory(
                acquaintance=acquaintance,
                text=f"Remark number {index}.",
                importance=0.5,
                turn=index + 2,
                embedding=embedding_to_bytes(vector),
            )
            for index, vector in enumerate(noise)
        ],
        batch_size=1000,
    )
    fact_embedding = embedding_to_bytes(embedder.embed([FACT])[0])
    Memory.objects.create(acquaintance=acquaintance, text=FACT, importance=0.5, turn=1, embedding=fact_embedding)
    Acquaintance.objects.filter(pk=acquaintance.pk).update(turns=10_002)
    recalled = recall(character, player, "What did I find at the docks?", limit=5)
    assert recalled.turn == 10_002
    assert recalled.memories[0] == FACT
    # The second call is served from the cache and must give the same answer.
    assert recall(character, player, "What did I find at the docks?", limit=5) == recalled


def test_an_embedding_of_the_wrong_shape_is_refused(character: Character, player: User) -> None:
    with pytest.raises(ValueError, match="384"):
        services.exchange_record(character=character, player=player, memories=[(FACT, 0.5, np.zeros(12))])
    with pytest.raises(ValueError, match="384"):
        services.memories_recall(character=character, player=player, query=np.zeros(12))


def test_a_very_long_statement_is_remembered_cut_at_a_word(
    character: Character, player: User, tell: Callable[..., int]
) -> None:
    tell(character, player, "word " * 400)
    text = Memory.objects.get().text
    assert len(text) <= 1000
    assert text.endswith("word…")
