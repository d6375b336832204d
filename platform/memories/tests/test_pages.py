from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from accounts.tests.factories import ModeratorFactory, UserFactory
from memories.models import Memory, MemoryKind
from moderation.services import version_approve
from tests.fixtures import SignIn
from worlds.models import Character
from worlds.services import world_publish
from worlds.tests.factories import CharacterFactory, WorldFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def player_client(signed_in: SignIn, player: User) -> Client:
    return signed_in(player)


@pytest.fixture
def memory(character: Character, player: User, tell: Callable[..., int]) -> Memory:
    tell(character, player, "I found a <b>silver</b> key at the docks.")
    return Memory.objects.get()


def test_the_pages_need_a_signed_in_player(client: Client, character: Character) -> None:
    for url in (reverse("memories:remembered_by"), reverse("memories:character", args=[character.pk])):
        response = client.get(url)
        assert response.status_code == 302
        assert reverse("account_login") in response["Location"]


def test_the_list_shows_the_characters_that_let_players_see_their_memories(
    player_client: Client, player: User, memory: Memory, tell: Callable[..., int]
) -> None:
    secretive = CharacterFactory(name="Morrow", players_can_view_memories=False)
    tell(secretive, player, "I told Morrow a secret.")
    page = player_client.get(reverse("memories:remembered_by")).content.decode()
    assert "Eve" in page
    assert reverse("memories:character", args=[memory.acquaintance.character_id]) in page
    assert "Morrow" not in page
    assert player_client.get(reverse("memories:character", args=[secretive.pk])).status_code == 404


def test_the_character_page_lists_memories_escaped_with_forms_to_change_them(
    player_client: Client, character: Character, memory: Memory
) -> None:
    page = player_client.get(reverse("memories:character", args=[character.pk])).content.decode()
    assert "I found a &lt;b&gt;silver&lt;/b&gt; key at the docks." in page
    assert "<b>silver</b>" not in page
    for name in ("memories:pin", "memories:edit", "memories:delete"):
        assert reverse(name, args=[character.pk, memory.pk]) in page
    assert reverse("memories:add", args=[character.pk]) in page


def test_a_player_pins_edits_adds_and_forgets_through_the_page(
    player_client: Client, character: Character, memory: Memory
) -> None:
    arguments = [character.pk, memory.pk]
    assert player_client.post(reverse("memories:pin", args=arguments)).status_code == 302
    assert Memory.objects.get(pk=memory.pk).kind == MemoryKind.PINNED
    player_client.post(reverse("memories:edit", args=arguments), {"text": "I found a copper coin."})
    assert Memory.objects.get(pk=memory.pk).text == "I found a copper coin."
    player_client.post(reverse("memories:add", args=[character.pk]), {"text": "Call me Captain."})
    assert Memory.objects.filter(kind=MemoryKind.PINNED).count() == 2
    response = player_client.post(reverse("memories:delete", args=arguments), follow=True)
    assert "Forgotten." in response.content.decode()
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_an_empty_edit_is_refused_with_a_message(player_client: Client, character: Character, memory: Memory) -> None:
    response = player_client.post(reverse("memories:edit", args=[character.pk, memory.pk]), {"text": ""}, follow=True)
    assert "Not changed" in response.content.decode()
    assert Memory.objects.get(pk=memory.pk).text == memory.text


def test_another_players_memory_is_not_found(client: Client, character: Character, memory: Memory) -> None:
    client.force_login(UserFactory())
    assert client.get(reverse("memories:character", args=[character.pk])).status_code == 404
    for name in ("memories:pin", "memories:edit", "memories:delete"):
        response = client.post(reverse(name, args=[character.pk, memory.pk]), {"text": "Nothing happened."})
        assert response.status_code == 404
    assert Memory.objects.get(pk=memory.pk).text == memory.text


def test_the_page_is_read_only_when_the_creator_does_not_allow_edits(
    player_client: Client, character: Character, memory: Memory
) -> None:
    character.players_can_edit_memories = False
    character.save()
    page = player_client.get(reverse("memories:character", args=[character.pk])).content.decode()
    assert "I found a &lt;b&gt;silver&lt;/b&gt; key at the docks." in page
    assert reverse("memories:edit", args=[character.pk, memory.pk]) not in page
    assert reverse("memories:add", args=[character.pk]) not in page
    response = player_client.post(reverse("memories:delete", args=[character.pk, memory.pk]))
    assert response.status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_a_person_without_the_play_permission_is_refused(client: Client, memory: Memory) -> None:
    someone = UserFactory()
    someone.groups.clear()
    client.force_login(someone)
    assert client.get(reverse("memories:remembered_by")).status_code == 403


def test_two_characters_of_one_name_are_told_apart_by_the_live_worlds_they_are_met_in(
    player_client: Client, player: User, tell: Callable[..., int]
) -> None:
    moderator = ModeratorFactory()
    eves = []
    for title in ("Harbour", "Forest"):
        world = WorldFactory(title=title)
        eve = CharacterFactory(owner=world.owner, name="Eve")
        world.characters.add(eve)
        version_approve(version=world_publish(world=world, by=world.owner), moderator=moderator)
        tell(eve, player, f"I met you in the {title}.")
        eves.append(eve)
    WorldFactory(title="Secret draft").characters.add(eves[0])
    listing = player_client.get(reverse("memories:remembered_by")).content.decode()
    assert "Met in Harbour" in listing and "Met in Forest" in listing and "Secret draft" not in listing
    page = player_client.get(reverse("memories:character", args=[eves[1].pk])).content.decode()
    assert "Met in Forest" in page and "Harbour" not in page
