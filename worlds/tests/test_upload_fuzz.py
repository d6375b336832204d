"""Fuzzing every upload path with mutated files: whatever arrives, the answer is a success or a 4xx naming the
problem, never a 5xx.

The mutations start from valid files (a rich world's cartridge, the fixture cards, lorebooks and Twee story)
and break them the ways files break: flipped bytes (a zip's CRC, a PNG's chunk), JSON values replaced by any
other JSON value (a list where an object belongs, a number where a name belongs, nesting), keys removed.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from rest_framework.test import APIClient

from accounts.models import User
from worlds.cartridge import cartridge_write
from worlds.documents import world_document
from worlds.exports import content_export
from worlds.models import World, WorldReferenceImage
from worlds.tests.factories import (
    BeatFactory,
    CharacterFactory,
    ClueFactory,
    HookBranchFactory,
    HookFactory,
    LoreEntryFactory,
    StoryFactory,
    WorldFactory,
)
from worlds.tests.test_studio_pages import world_data

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "formats"
JSON_FIXTURES = ("eve_card_v2.json", "eve_card_v3.json", "saltmarsh_lorebook_v3.json", "saltmarsh_world_info.json")
BYTE_FIXTURES = ("eve_card_v3.png", "harbour_lights.twee")

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


def png(colour: tuple[int, int, int] = (20, 120, 200)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (12, 12), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def node_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value inside `value`, itself included."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from node_paths(child, (*path, key))


def replaced(value: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    """A copy of `value` with the node at `path` replaced (or, for the sentinel DELETE, removed)."""
    if not path:
        return replacement
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    if rest or replacement is not DELETE:
        copy[head] = replaced(value[head], tuple(rest), replacement)
    else:
        del copy[head]
    return copy


DELETE = object()


@st.composite
def json_mutated(draw: st.DrawFn, value: Any) -> Any:
    """`value` with one to three nodes replaced by any JSON value, removed, or buried under deep nesting."""
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(node_paths(value))))
        replacement = draw(
            st.one_of(json_values, st.just(DELETE) if path else st.nothing(), st.integers(1, 300).map(nested))
        )
        value = replaced(value, path, replacement)
    return value


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def bytes_flipped(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` with one to eight bytes changed, or cut short."""
    mutable = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        position = draw(st.integers(0, len(mutable) - 1))
        mutable[position] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        del mutable[draw(st.integers(1, len(mutable))) :]
    return bytes(mutable)


@pytest.fixture(autouse=True)
def media_in_tmp(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def rich_world(creator: User) -> World:
    """A world with something of every kind a document holds, images included."""
    world = WorldFactory(owner=creator, cover_image=ContentFile(png(), name="cover.png"))
    WorldReferenceImage.objects.create(world=world, image=ContentFile(png((9, 9, 9)), name="reference.png"))
    eve = CharacterFactory(owner=creator, portrait=ContentFile(png((200, 0, 0)), name="eve.png"), secrets="A secret.")
    entry = LoreEntryFactory(lorebook__owner=creator)
    eve.lorebook = entry.lorebook
    eve.save()
    ClueFactory(character=eve)
    world.characters.add(eve)
    world.lorebooks.add(entry.lorebook)
    HookBranchFactory(hook=HookFactory(world=world))
    story = StoryFactory(world=world, start_beat="arrival")
    story.characters.add(eve)
    BeatFactory(story=story, name="arrival", choices=[])
    return world


def uploaded(api: APIClient, data: bytes) -> int:
    """The import API's status for `data`; a 400 must say what was wrong."""
    response = api.post("/api/imports/", {"file": io.BytesIO(data)}, format="multipart")
    assert response.status_code in (201, 400), response.status_code
    if response.status_code == 400:
        assert str(response.json()).strip("{}[]' ")
    return response.status_code


def test_the_rich_world_s_cartridge_imports_so_the_mutations_start_from_a_valid_file(
    api: APIClient, rich_world: World
) -> None:
    data = content_export(kind="world", content=rich_world, export_format="cartridge").data
    assert uploaded(api, data) == 201


def test_a_cartridge_with_flipped_bytes_is_imported_or_refused_never_a_5xx(api: APIClient, rich_world: World) -> None:
    data = content_export(kind="world", content=rich_world, export_format="cartridge").data

    @FUZZ
    @given(mutated=bytes_flipped(data))
    def check(mutated: bytes) -> None:
        uploaded(api, mutated)

    check()


def test_a_cartridge_whose_world_json_is_mutated_is_imported_or_refused_never_a_5xx(
    api: APIClient, rich_world: World
) -> None:
    data = content_export(kind="world", content=rich_world, export_format="cartridge").data
    original = zipfile.ZipFile(io.BytesIO(data))
    assets = {name.removeprefix("assets/"): original.read(name) for name in original.namelist() if "assets/" in name}
    document = world_document(rich_world)

    @FUZZ
    @given(mutated=json_mutated(document))
    def check(mutated: Any) -> None:
        data = cartridge_write(document=mutated, assets=assets, provenance={})
        uploaded(api, data)

    check()


@pytest.mark.parametrize("name", JSON_FIXTURES)
def test_a_mutated_card_or_lorebook_is_imported_or_refused_never_a_5xx(api: APIClient, name: str) -> None:
    original = json.loads((FIXTURES / name).read_bytes())

    @FUZZ
    @given(mutated=json_mutated(original))
    def check(mutated: Any) -> None:
        uploaded(api, json.dumps(mutated).encode())

    check()


@pytest.mark.parametrize("name", BYTE_FIXTURES)
def test_a_card_png_or_twee_story_with_flipped_bytes_is_imported_or_refused_never_a_5xx(
    api: APIClient, name: str
) -> None:
    @FUZZ
    @given(mutated=bytes_flipped((FIXTURES / name).read_bytes()))
    def check(mutated: bytes) -> None:
        uploaded(api, mutated)

    check()


def with_bad_crc(data: bytes) -> bytes:
    """`data` (a zip) with one byte of world.json's compressed content changed, so its CRC no longer matches."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    info = archive.getinfo("world.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    mutable = bytearray(data)
    mutable[start + info.compress_size // 2] ^= 0x01
    return bytes(mutable)


def cartridge_of(world_json: str, data: bytes) -> bytes:
    """The cartridge `data` with its world.json replaced by `world_json`."""
    original = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in original.namelist():
            archive.writestr(name, world_json if name == "world.json" else original.read(name))
    return buffer.getvalue()


def document_with(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> str:
    return json.dumps(replaced(document, path, value))


@pytest.mark.parametrize(
    ("breaking", "complaint"),
    [
        (lambda data, document: with_bad_crc(data), "world.json: cannot be read from the zip"),
        (lambda data, document: cartridge_of("[" * 100_000 + "]" * 100_000, data), "nested deeper than 64 levels"),
        (
            lambda data, document: cartridge_of(document_with(document, ("world",), []), data),
            "world.json $.world: [] is not of type 'object'",
        ),
        (
            lambda data, document: cartridge_of(document_with(document, ("world", "reference_images"), [123]), data),
            "world.json $.world.reference_images[0]: 123 is not of type 'string'",
        ),
        (
            lambda data, document: cartridge_of(document_with(document, ("characters", 0, "lorebook"), [1]), data),
            "world.json $.characters[0].lorebook: [1] is not of type 'string', 'null'",
        ),
        (
            lambda data, document: cartridge_of(document_with(document, ("world", "title"), {"a": 1}), data),
            "world.json $.world.title: {'a': 1} is not of type 'string'",
        ),
    ],
    ids=[
        "bad crc",
        "deeply nested",
        "list for an object",
        "number for an image name",
        "list for a key",
        "object for a title",
    ],
)
def test_a_broken_cartridge_is_refused_with_a_400_that_names_the_problem(
    api: APIClient, rich_world: World, breaking: Any, complaint: str
) -> None:
    data = content_export(kind="world", content=rich_world, export_format="cartridge").data
    response = api.post("/api/imports/", {"file": io.BytesIO(breaking(data, world_document(rich_world)))})
    assert response.status_code == 400
    assert complaint in str(response.json())


@pytest.mark.parametrize("world", ["abc", "-1", "1.5", "9" * 30, "\u0661", "0x10", " "])
def test_the_studio_import_page_names_a_bad_world_instead_of_failing(creator: User, world: str) -> None:
    client = Client()
    client.force_login(creator)
    upload = SimpleUploadedFile("eve.json", (FIXTURES / "eve_card_v2.json").read_bytes())
    page = client.post(reverse("worlds:import"), {"file": upload, "world": world})
    assert page.status_code == 400
    assert "the world to add it to must be one of yours" in page.content.decode()


def test_the_studio_import_page_answers_every_mutated_upload_with_a_page(creator: User, rich_world: World) -> None:
    client = Client()
    client.force_login(creator)
    data = content_export(kind="world", content=rich_world, export_format="cartridge").data

    @FUZZ
    @given(mutated=bytes_flipped(data), world=st.text(max_size=12))
    def check(mutated: bytes, world: str) -> None:
        page = client.post(reverse("worlds:import"), {"file": SimpleUploadedFile("w.zip", mutated), "world": world})
        assert page.status_code in (302, 400)

    check()


def test_a_studio_cover_with_flipped_bytes_is_saved_or_refused_on_the_page(creator: User) -> None:
    client = Client()
    client.force_login(creator)

    @FUZZ
    @given(mutated=bytes_flipped(png()))
    def check(mutated: bytes) -> None:
        upload = SimpleUploadedFile("cover.png", mutated, content_type="image/png")
        page = client.post(reverse("worlds:world_create"), world_data(cover_image=upload))
        assert page.status_code in (200, 302)

    check()
