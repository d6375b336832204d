"""An approved version is public, but what its world keeps from players is not: only its creator (and the
moderators, and play) read the whole document."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tests.factories import ModeratorFactory, UserFactory
from moderation.services import version_approve
from worlds.documents import world_document
from worlds.models import World, WorldVersion
from worlds.services import world_publish, world_remix
from worlds.tests.factories import CharacterFactory, ClueFactory, HookBranchFactory, HookFactory, WorldFactory

pytestmark = pytest.mark.django_db

SECRET_TEXTS = (
    "SECRET-she-drowned-her-brother",
    "CLUE-the-key-hangs-under-the-stairs",
    "BRANCH-INTENT-the-player-bows",
    "BRANCH-EXAMPLE-i-kneel",
    "BRANCH-NARRATION-the-guardian-weeps",
    "FALLBACK-GUIDANCE-never-let-them-pass",
)


def approved_world_with_secrets() -> WorldVersion:
    world = WorldFactory()
    eve = CharacterFactory(owner=world.owner, secrets=SECRET_TEXTS[0])
    ClueFactory(character=eve, text=SECRET_TEXTS[1])
    world.characters.add(eve)
    hook = HookFactory(world=world, fallback_guidance=SECRET_TEXTS[5])
    HookBranchFactory(
        hook=hook, intent=SECRET_TEXTS[2], examples=[SECRET_TEXTS[3]], effects={"narration": SECRET_TEXTS[4]}
    )
    version = world_publish(world=world, by=world.owner)
    return version_approve(version=version, moderator=ModeratorFactory())


def secrets_in(text: str) -> list[str]:
    return [secret for secret in SECRET_TEXTS if secret in text]


@pytest.mark.parametrize("viewer", ["anonymous", "another creator"])
def test_an_approved_version_read_through_the_api_by_anyone_else_holds_no_secret_text(viewer: str) -> None:
    version = approved_world_with_secrets()
    api = APIClient()
    if viewer != "anonymous":
        api.force_authenticate(UserFactory())
    detail = api.get(f"/api/versions/{version.pk}/")
    listing = api.get("/api/versions/")
    assert detail.status_code == listing.status_code == 200
    assert secrets_in(detail.content.decode()) == secrets_in(listing.content.decode()) == []
    document = detail.json()["document"]
    assert [character["name"] for character in document["characters"]] == ["Eve"]
    assert [hook["presentation"] for hook in document["hooks"]] == [version.document["hooks"][0]["presentation"]]


def test_the_creator_and_the_moderators_read_the_whole_document() -> None:
    version = approved_world_with_secrets()
    for person in (version.world.owner, ModeratorFactory()):
        api = APIClient()
        api.force_authenticate(person)
        assert api.get(f"/api/versions/{version.pk}/").json()["document"] == version.document
    assert secrets_in(json.dumps(version.document)) == list(SECRET_TEXTS)  # play still has everything


def test_a_remix_by_another_creator_starts_without_the_secrets() -> None:
    version = approved_world_with_secrets()
    remixed = world_remix(version=version, owner=UserFactory())
    assert secrets_in(json.dumps(world_document(remixed))) == []
    assert remixed.characters.get().name == "Eve" and remixed.hooks.get().name == "guardian"


def test_the_studio_page_of_someone_else_s_version_shows_no_secret_text() -> None:
    version = approved_world_with_secrets()
    client = Client()
    client.force_login(UserFactory())
    page = client.get(reverse("worlds:version", args=[version.pk]))
    assert page.status_code == 200
    assert secrets_in(page.content.decode()) == [] and secrets_in(json.dumps(page.context["document"])) == []
    assert World.objects.count() == 1
