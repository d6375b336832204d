"""The authoring API through DRF's client: validation like the studio's, owner-only drafts, versions read-only."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from accounts.tests.factories import ModeratorFactory, UserFactory
from moderation.services import version_approve
from worlds.models import World, WorldVersion
from worlds.tests.factories import CharacterFactory, LorebookFactory, WorldFactory

pytestmark = pytest.mark.django_db


def test_a_creator_makes_a_world_with_tags(api: APIClient, creator: User) -> None:
    response = api.post(
        "/api/worlds/",
        {
            "title": "Foghaven",
            "logline": "A harbour in fog.",
            "tags": ["Harbour", "mystery"],
            "engine_parameters": {"seed": 3, "weather": "rain"},
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    world = World.objects.get(slug="foghaven")
    assert world.owner == creator
    assert response.json()["tags"] == ["harbour", "mystery"]


def test_the_api_reports_model_validation_by_field(api: APIClient) -> None:
    response = api.post(
        "/api/worlds/", {"title": "Foghaven", "logline": "x", "engine_parameters": {"size": 2}}, format="json"
    )
    assert response.status_code == 400
    assert "size" in response.json()["engine_parameters"][0]
    assert not World.objects.exists()


def test_a_form_s_null_for_a_json_field_is_a_validation_error_not_a_server_error(api: APIClient) -> None:
    response = api.post("/api/lorebooks/", {"name": "Harbour lore", "extensions": "null"}, format="multipart")
    assert response.status_code == 400
    assert "extensions" in response.json()


def test_a_lorebook_is_written_with_its_entries_and_a_bad_entry_saves_nothing(api: APIClient) -> None:
    good = {"name": "Lore", "entries": [{"keys": ["lighthouse"], "content": "Dark since the storm."}]}
    created = api.post("/api/lorebooks/", good, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["entries"][0]["keys"] == ["lighthouse"]
    bad = {"name": "Renamed", "entries": [{"keys": ["ok"], "content": "fine"}, {"keys": [], "content": "no keys"}]}
    response = api.put(f"/api/lorebooks/{created.json()['id']}/", bad, format="json")
    assert response.status_code == 400
    assert "#2" in str(response.json())
    kept = api.get(f"/api/lorebooks/{created.json()['id']}/").json()
    assert kept["name"] == "Lore"
    assert [entry["content"] for entry in kept["entries"]] == ["Dark since the storm."]


def test_another_creators_drafts_are_invisible(api: APIClient) -> None:
    foreign = WorldFactory()
    assert api.get(f"/api/worlds/{foreign.pk}/").status_code == 404
    assert api.patch(f"/api/worlds/{foreign.pk}/", {"title": "Mine"}, format="json").status_code == 404
    assert api.get("/api/worlds/").json()["results"] == []


def test_a_world_cannot_take_another_creators_character(api: APIClient, creator: User) -> None:
    world = WorldFactory(owner=creator)
    foreign = CharacterFactory()
    response = api.patch(f"/api/worlds/{world.pk}/", {"characters": [foreign.pk]}, format="json")
    assert response.status_code == 400


def test_a_hook_with_two_branches_belongs_to_the_callers_world(api: APIClient, creator: User) -> None:
    world = WorldFactory(owner=creator)
    hook = {
        "world": world.pk,
        "name": "guardian",
        "trigger": "keywords",
        "trigger_value": {"keywords": ["bridge"]},
        "presentation": "A guardian asks for a gift.",
        "branches": [
            {
                "name": "gift",
                "intent": "offer a gift",
                "examples": ["take my lantern"],
                "effects": {"world_events": [{"kind": "dawn"}]},
            },
            {"name": "refuse", "intent": "refuse", "examples": ["no"], "effects": {"set_flags": ["angered"]}},
        ],
    }
    response = api.post("/api/hooks/", hook, format="json")
    assert response.status_code == 201, response.json()
    assert [branch["name"] for branch in response.json()["branches"]] == ["gift", "refuse"]
    hook["world"] = WorldFactory().pk
    assert api.post("/api/hooks/", hook, format="json").status_code == 400


def test_publish_then_remix_through_the_api(api: APIClient, creator: User) -> None:
    world = WorldFactory(owner=creator)
    version = api.post(f"/api/worlds/{world.pk}/publish/")
    assert version.status_code == 201, version.json()
    assert version.json()["status"] == "pending"
    other = APIClient()
    other.force_authenticate(UserFactory())
    # A submission is private until a moderator approves it; its creator sees it meanwhile.
    assert other.get(f"/api/versions/{version.json()['id']}/").status_code == 404
    assert other.post(f"/api/versions/{version.json()['id']}/remix/").status_code == 404
    assert api.get(f"/api/versions/{version.json()['id']}/").json()["status"] == "pending"
    version_approve(version=WorldVersion.objects.get(pk=version.json()["id"]), moderator=ModeratorFactory())
    assert other.get(f"/api/versions/{version.json()['id']}/").json()["creator"] == creator.username
    remix = other.post(f"/api/versions/{version.json()['id']}/remix/")
    assert remix.status_code == 201
    assert remix.json()["remixed_from"] == version.json()["id"]


def test_published_versions_cannot_be_changed(api: APIClient, creator: User) -> None:
    world = WorldFactory(owner=creator)
    version_id = api.post(f"/api/worlds/{world.pk}/publish/").json()["id"]
    assert api.patch(f"/api/versions/{version_id}/", {"number": 9}, format="json").status_code == 405
    assert api.delete(f"/api/versions/{version_id}/").status_code == 405


def test_anonymous_callers_cannot_write(creator: User) -> None:
    assert APIClient().post("/api/worlds/", {"title": "x"}, format="json").status_code in (401, 403)


def test_the_authoring_api_is_in_the_schema(api: APIClient) -> None:
    paths = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert {"/api/worlds/", "/api/lorebooks/{id}/", "/api/worlds/{id}/publish/", "/api/versions/{id}/remix/"} <= set(
        paths
    )


def test_a_character_keeps_its_clues(api: APIClient, creator: User) -> None:
    book = LorebookFactory(owner=creator)
    character = {
        "name": "Eve",
        "persona": "Keeper",
        "greeting": "Hello.",
        "lorebook": book.pk,
        "clues": [{"name": "key", "text": "Under the stairs.", "condition": "keyword", "condition_value": "key"}],
    }
    response = api.post("/api/characters/", character, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["clues"][0]["condition"] == "keyword"
