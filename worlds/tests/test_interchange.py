"""Imports and exports with the repository's own fixture files: each format, round trips, bad files, atomicity."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase as HypothesisTestCase
from rest_framework.test import APIClient

from accounts.models import User
from accounts.tests.factories import UserFactory
from worlds import formats
from worlds.documents import world_document
from worlds.exports import content_export
from worlds.imports import content_import
from worlds.models import Character, Lorebook, Story, World
from worlds.tests.factories import HookBranchFactory, HookFactory, LoreEntryFactory, WorldFactory

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "formats"

pytestmark = pytest.mark.django_db


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def counts() -> tuple[int, ...]:
    return (World.objects.count(), Character.objects.count(), Lorebook.objects.count(), Story.objects.count())


@pytest.mark.parametrize(
    "name", ["eve_card_v2.png", "eve_card_v3.png", "eve_card_v2.json", "eve_card_v3.json", "eve_card_v1.json"]
)
def test_every_card_flavour_imports_as_a_character(creator: User, name: str) -> None:
    [created] = content_import(data=fixture(name), owner=creator)
    eve = Character.objects.get(pk=created["id"])
    assert created["type"] == "character"
    assert eve.name == "Eve"
    assert eve.greeting
    assert created["lore_entries"] == (eve.lorebook.entries.count() if eve.lorebook else 0)
    assert bool(eve.portrait) == name.endswith(".png")


def test_a_card_png_round_trip_keeps_unknown_extensions_clues_and_the_book(creator: User) -> None:
    [created] = content_import(data=fixture("eve_card_v3.png"), owner=creator)
    eve = Character.objects.get(pk=created["id"])
    eve.card_extensions["some_other_tool"] = {"mood": "stormy", "nested": [1, 2]}
    eve.save()
    eve.clues.create(name="spare-key", text="Under the third stair.", condition="keyword", condition_value="key")
    exported = content_export(kind="character", content=eve, export_format="card-png").data
    keywords = {chunk for chunk in formats.png_chunks.text_chunks(formats.png_chunks.read_chunks(exported))}
    assert {"chara", "ccv3"} <= keywords
    [again] = content_import(data=exported, owner=UserFactory())
    copy = Character.objects.get(pk=again["id"])
    assert copy.card_extensions["some_other_tool"] == {"mood": "stormy", "nested": [1, 2]}
    assert list(copy.clues.values_list("name", "condition_value")) == [("spare-key", "key")]
    assert copy.lorebook.entries.count() == eve.lorebook.entries.count()
    assert copy.creator_notes == eve.creator_notes
    assert copy.card_extra == eve.card_extra


def test_a_twee_story_imports_as_a_beat_graph_and_exports_back(creator: User) -> None:
    created = content_import(data=fixture("harbour_lights.twee"), owner=creator)
    assert [item["type"] for item in created] == ["world", "story"]
    story = Story.objects.get(pk=created[1]["id"])
    assert created[1]["beats"] == story.beats.count() and created[1]["start_beat"] == story.start_beat
    start = story.beats.get(name=story.start_beat)
    assert start.choices and all(story.beats.filter(name=choice["to"]).exists() for choice in start.choices)
    exported = content_export(kind="story", content=story, export_format="twee").data
    original, again = formats.twee_parse(fixture("harbour_lights.twee")), formats.twee_parse(exported)
    assert again == original


@pytest.mark.parametrize(
    ("name", "export_format"), [("saltmarsh_lorebook_v3.json", "lorebook"), ("saltmarsh_world_info.json", "world-info")]
)
def test_lorebooks_import_and_export_in_their_own_shape(creator: User, name: str, export_format: str) -> None:
    [created] = content_import(data=fixture(name), owner=creator)
    book = Lorebook.objects.get(pk=created["id"])
    assert created["lore_entries"] == book.entries.count() > 0
    exported = content_export(kind="lorebook", content=book, export_format=export_format).data
    read = formats.lorebook_from_v3 if export_format == "lorebook" else formats.lorebook_from_world_info
    original = read(fixture(name))
    assert [entry.keys for entry in read(exported).entries] == [entry.keys for entry in original.entries]
    assert [entry.content for entry in read(exported).entries] == [entry.content for entry in original.entries]


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        (fixture("truncated_card.png"), "truncated"),
        (fixture("plain_portrait.png"), "holds no character card"),
        (fixture("broken_link.twee"), "links to 'Lighthouse'"),
        (b'{"spec": "chara_card_v9", "data": {"name": "Eve"}}', "chara_card_v9"),
        (b'{"spec": "chara_card_v2", "data": {"name": "Eve",', "JSON"),
        (b"\x00\x01binary nonsense", "not a"),
        (b"PK\x03\x04not really a zip", "zip"),
    ],
)
def test_a_bad_file_is_refused_by_name_and_creates_nothing(creator: User, data: bytes, complaint: str) -> None:
    before = counts()
    with pytest.raises(ValidationError) as caught:
        content_import(data=data, owner=creator)
    assert complaint in str(caught.value)
    assert counts() == before


def test_an_oversized_card_is_refused(creator: User) -> None:
    padding = "x" * (3 * 1024 * 1024)
    data = json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Eve", "description": padding}})
    with pytest.raises(ValidationError, match="over the limit"):
        content_import(data=data.encode(), owner=creator)


def test_a_card_whose_lorebook_our_models_refuse_leaves_nothing_behind(creator: User) -> None:
    card = json.loads(fixture("eve_card_v2.json"))
    card["data"]["character_book"]["entries"][0]["content"] = "x" * 30000  # over LoreEntry's limit
    before = counts()
    with pytest.raises(ValidationError, match=r"character_book\.entries"):
        content_import(data=json.dumps(card).encode(), owner=creator)
    assert counts() == before


def test_the_command_prints_what_it_created_and_a_bad_file_undoes_the_whole_run(creator: User) -> None:
    out = io.StringIO()
    call_command(
        "import_content",
        str(FIXTURES / "eve_card_v3.json"),
        str(FIXTURES / "harbour_lights.twee"),
        "--owner",
        creator.username,
        stdout=out,
    )
    created = json.loads(out.getvalue())["created"]
    assert [item["type"] for item in created] == ["character", "world", "story"]
    before = counts()
    with pytest.raises(CommandError, match=r"broken_link\.twee: twee: passage 'Docks'"):
        call_command(
            "import_content",
            str(FIXTURES / "eve_card_v2.json"),
            str(FIXTURES / "broken_link.twee"),
            "--owner",
            creator.username,
            stdout=io.StringIO(),
        )
    assert counts() == before


def test_the_export_command_writes_a_cartridge_that_imports(creator: User, tmp_path: Path) -> None:
    world = WorldFactory(owner=creator)
    target = tmp_path / "world.zip"
    call_command(
        "export_content", "world", str(world.pk), "--format", "cartridge", "-o", str(target), stdout=io.StringIO()
    )
    manifest = json.loads(zipfile.ZipFile(target).read("manifest.json"))
    assert manifest["provenance"]["creator"] == creator.username
    created = content_import(data=target.read_bytes(), owner=UserFactory())
    assert world_document(World.objects.get(pk=created[0]["id"])) == world_document(world)


def test_a_cartridge_carries_its_images(creator: User) -> None:
    [created] = content_import(data=fixture("eve_card_v3.png"), owner=creator)
    world = WorldFactory(owner=creator)
    world.characters.add(created["id"])
    data = content_export(kind="world", content=world, export_format="cartridge").data
    imported = World.objects.get(pk=content_import(data=data, owner=UserFactory())[0]["id"])
    portrait = imported.characters.get().portrait
    assert portrait.read() == Character.objects.get(pk=created["id"]).portrait.read()


@pytest.mark.parametrize("name", ["../evil.png", "/etc/passwd"])
def test_a_cartridge_with_an_unsafe_member_name_is_refused(creator: User, name: str) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"format": "worldloom-cartridge", "format_version": 1}))
        archive.writestr("world.json", "{}")
        archive.writestr(name, b"x")
    with pytest.raises(ValidationError, match="unsafe file name"):
        content_import(data=buffer.getvalue(), owner=creator)


def test_the_import_api_takes_an_upload_and_the_export_api_returns_a_file(creator: User) -> None:
    api = APIClient()
    api.force_authenticate(creator)
    upload = io.BytesIO(fixture("eve_card_v3.png"))
    upload.name = "anything.bin"
    response = api.post("/api/imports/", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.json()
    character_id = response.json()["created"][0]["id"]
    exported = api.get(f"/api/exports/character/{character_id}/?file_format=card-json")
    assert exported.status_code == 200
    assert json.loads(exported.content)["spec"] == "chara_card_v3"
    bad = io.BytesIO(fixture("truncated_card.png"))
    bad.name = "card.png"
    refused = api.post("/api/imports/", {"file": bad}, format="multipart")
    assert refused.status_code == 400
    assert "truncated" in str(refused.json())
    stranger = APIClient()
    stranger.force_authenticate(UserFactory())
    assert stranger.get(f"/api/exports/character/{character_id}/").status_code == 404


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=40)
keys = st.lists(st.text(alphabet="abcdefghij ", min_size=1, max_size=12).filter(str.strip), min_size=1, max_size=3)


class TestCartridgeRoundTrip(HypothesisTestCase):
    """Property: exporting a world as a cartridge and importing it yields the same world."""

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        title=texts.filter(str.strip),
        description=texts,
        entries=st.lists(st.tuples(keys, texts.filter(str.strip), st.integers(-50, 500)), max_size=4),
        examples=st.lists(texts.filter(str.strip), min_size=1, max_size=3),
        weather=st.sampled_from(["clear", "snow", "rain"]),
    )
    def test_export_then_import_is_identity(
        self, title: str, description: str, entries: list, examples: list, weather: str
    ) -> None:
        owner = UserFactory()
        world = WorldFactory(
            owner=owner, title=title, description=description, engine_parameters={"seed": 5, "weather": weather}
        )
        for entry_keys, content, order in entries:
            entry = LoreEntryFactory(lorebook__owner=owner, keys=entry_keys, content=content, insertion_order=order)
            world.lorebooks.add(entry.lorebook)
        HookBranchFactory(hook=HookFactory(world=world), examples=examples)
        data = content_export(kind="world", content=world, export_format="cartridge").data
        created = content_import(data=data, owner=UserFactory())
        assert world_document(World.objects.get(pk=created[0]["id"])) == world_document(world)
