"""What players may do with the memories a character holds of them, called as services."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from accounts.models import User
from accounts.tests.factories import UserFactory
from inference.language.embedding import HashedWordsEmbedder
from memories import services
from memories.models import Memory, MemoryKind
from worlds.models import Character
from worlds.tests.factories import CharacterFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(character: Character, player: User, tell: Callable[..., int]) -> Memory:
    tell(character, player, "I found a silver key at the docks.")
    return Memory.objects.select_related("acquaintance__character").get()


def test_pinning_makes_a_memory_most_important_and_unpinning_gives_it_back(player: User, memory: Memory) -> None:
    services.memory_pin(player=player, memory=memory, pinned=True)
    memory.refresh_from_db()
    assert (memory.kind, memory.importance) == (MemoryKind.PINNED, 1.0)
    services.memory_pin(player=player, memory=memory, pinned=False)
    memory.refresh_from_db()
    assert memory.kind == MemoryKind.EPISODIC
    assert memory.importance < 1.0


def test_an_edit_re_embeds_the_new_words(
    player: User, memory: Memory, embedder: HashedWordsEmbedder, character: Character
) -> None:
    services.memory_edit(player=player, memory=memory, text="  I lost my  compass in the marsh. ", embedder=embedder)
    memory.refresh_from_db()
    assert memory.text == "I lost my compass in the marsh."
    assert bytes(memory.embedding) == embedder.embed(["I lost my compass in the marsh."])[0].astype("<f4").tobytes()


def test_it_rejects_a_foreign_player(memory: Memory) -> None:
    stranger = UserFactory()
    for change in (
        lambda: services.memory_pin(player=stranger, memory=memory, pinned=True),
        lambda: services.memory_edit(player=stranger, memory=memory, text="Nothing happened."),
        lambda: services.memory_delete(player=stranger, memory=memory),
    ):
        with pytest.raises(PermissionDenied, match="not one of yours"):
            change()
    assert Memory.objects.get().text == "I found a silver key at the docks."


def test_changes_are_refused_when_the_creator_does_not_allow_them(
    character: Character, player: User, memory: Memory
) -> None:
    character.players_can_edit_memories = False
    character.save()
    memory.refresh_from_db()
    with pytest.raises(PermissionDenied, match="does not let players change"):
        services.memory_delete(player=player, memory=memory)
    with pytest.raises(PermissionDenied, match="does not let players change"):
        services.memory_add_pinned(character=character, player=player, text="Call me Captain.")
    assert Memory.objects.count() == 1


def test_nothing_is_changed_when_memories_are_private(character: Character, player: User, memory: Memory) -> None:
    character.players_can_view_memories = False
    character.save()
    memory.refresh_from_db()
    with pytest.raises(PermissionDenied, match="private"):
        services.memory_pin(player=player, memory=memory, pinned=True)


def test_a_shared_world_memory_cannot_be_pinned_into_by_one_player(player: User) -> None:
    character = CharacterFactory(memory_scope="world", players_can_edit_memories=True)
    with pytest.raises(PermissionDenied, match="each player separately"):
        services.memory_add_pinned(character=character, player=player, text="Call me Captain.")


@pytest.mark.parametrize(("text", "message"), [("   ", "needs some text"), ("x" * 1001, "at most 1000")])
def test_an_empty_or_too_long_text_is_refused(player: User, memory: Memory, text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        services.memory_edit(player=player, memory=memory, text=text)
