"""Stored images keep neither the name nor the type an uploader chose: re-encoded, renamed, served as what they are.

The attack these tests replay: a cartridge whose cover is a PNG that is also an HTML page, named cover.html,
and a reference image that is a GIF that is also JavaScript, named x.js. Served inline with a type guessed
from the name, the page ran on the site's origin and loaded the script as same-origin.
"""

from __future__ import annotations

import base64
import io
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from accounts.models import User
from accounts.tests.factories import ModeratorFactory, UserFactory
from moderation.services import version_approve
from worlds.cartridge import cartridge_write
from worlds.documents import world_document
from worlds.imports import content_import
from worlds.models import Character, World
from worlds.services import world_publish
from worlds.tests.factories import WorldFactory
from worlds.tests.test_studio_pages import character_data, rows_data, world_data

pytestmark = pytest.mark.django_db

HTML_PAYLOAD = b'<html><body><script src="/worlds/evil/image"></script></body></html>'
SCRIPT_PAYLOAD = b";fetch('/api/accounts/me/').then(r=>r.text()).then(alert)//"
GENERATED = r"[0-9a-f]{32}"


def image_bytes(kind: str, size: tuple[int, int] = (8, 8)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 40)).save(buffer, format=kind)
    return buffer.getvalue()


def png_html_polyglot() -> bytes:
    """A PNG that a browser sniffing for HTML (or told text/html) renders as a page."""
    return image_bytes("PNG") + HTML_PAYLOAD


def gif_js_polyglot() -> bytes:
    """A GIF whose trailing bytes are a script, as a <script src> would run them if served as JavaScript."""
    return image_bytes("GIF") + SCRIPT_PAYLOAD


@pytest.fixture(autouse=True)
def media_in_tmp(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def stored_bytes(name: str) -> bytes:
    with default_storage.open(name, "rb") as file:
        return file.read()


def hostile_cartridge(owner: User) -> bytes:
    """A valid cartridge whose images carry payloads under names chosen to be served as HTML and script."""
    document = world_document(WorldFactory(owner=owner))
    document["world"]["cover_image"] = "cover.html"
    document["world"]["reference_images"] = ["x.js"]
    document["characters"] = [
        {"key": "character-0", "name": "Eve", "persona": "A keeper.", "greeting": "Hello.", "portrait": "a/b/c.svg"}
    ]
    assets = {"cover.html": png_html_polyglot(), "x.js": gif_js_polyglot(), "a/b/c.svg": png_html_polyglot()}
    return cartridge_write(document=document, assets=assets, provenance={})


def listed(world: World) -> None:
    version_approve(version=world_publish(world=world, by=world.owner), moderator=ModeratorFactory())


def test_a_polyglot_cartridge_s_images_are_stored_re_encoded_under_generated_names() -> None:
    [created, *_] = content_import(data=hostile_cartridge(UserFactory()), owner=UserFactory())
    world = World.objects.get(pk=created["id"])
    cover, reference = world.cover_image.name, world.reference_images.get().image.name
    portrait = world.characters.get().portrait.name
    assert re.fullmatch(rf"imports/{GENERATED}\.png", cover), cover
    assert re.fullmatch(rf"imports/{GENERATED}\.gif", reference), reference
    assert re.fullmatch(rf"imports/{GENERATED}\.png", portrait), portrait
    assert HTML_PAYLOAD not in stored_bytes(cover) and HTML_PAYLOAD not in stored_bytes(portrait)
    assert SCRIPT_PAYLOAD not in stored_bytes(reference)
    assert Image.open(default_storage.open(cover)).format == "PNG"


def test_the_gallery_serves_a_polyglot_cover_as_the_image_it_is_with_nosniff(client: Client) -> None:
    [created, *_] = content_import(data=hostile_cartridge(UserFactory()), owner=UserFactory())
    world = World.objects.get(pk=created["id"])
    listed(world)
    response = client.get(reverse("gallery:world_image", args=[world.slug]))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == 'inline; filename="image.png"'
    assert HTML_PAYLOAD not in b"".join(response.streaming_content)


@pytest.mark.parametrize(
    ("content", "content_type", "disposition"),
    [
        (png_html_polyglot(), "image/png", 'inline; filename="image.png"'),
        (gif_js_polyglot(), "image/gif", 'inline; filename="image.gif"'),
        (HTML_PAYLOAD, "application/octet-stream", 'attachment; filename="download"'),
    ],
    ids=["png stored as .html", "gif stored as .js", "html stored as .html"],
)
def test_a_file_stored_before_re_encoding_is_served_by_its_content_not_its_name(
    client: Client, content: bytes, content_type: str, disposition: str
) -> None:
    name = default_storage.save("covers/cover.html", io.BytesIO(content))
    world = WorldFactory(cover_image=name)  # saved as it was before uploads were re-encoded
    listed(world)
    response = client.get(reverse("gallery:world_image", args=[world.slug]))
    assert (response["Content-Type"], response["Content-Disposition"]) == (content_type, disposition)
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_cover_uploaded_in_the_studio_is_re_encoded_under_a_generated_png_name() -> None:
    creator = UserFactory()
    client = Client()
    client.force_login(creator)
    # The form refuses an .html name outright; an image's name with a page inside was stored as it came.
    upload = SimpleUploadedFile("cover.png", png_html_polyglot(), content_type="text/html")
    response = client.post(reverse("worlds:world_create"), world_data(cover_image=upload))
    assert response.status_code == 302
    name = World.objects.get(owner=creator).cover_image.name
    assert re.fullmatch(rf"covers/{GENERATED}\.png", name), name
    assert HTML_PAYLOAD not in stored_bytes(name)


def test_a_portrait_uploaded_in_the_studio_under_a_path_like_name_stays_in_the_portraits_folder(
    media_in_tmp: Path,
) -> None:
    creator = UserFactory()
    client = Client()
    client.force_login(creator)
    upload = SimpleUploadedFile("../a/b.gif", gif_js_polyglot(), content_type="text/javascript")
    response = client.post(
        reverse("worlds:character_create"), character_data(name="a/b", portrait=upload) | rows_data("clues", [])
    )
    assert response.status_code == 302
    name = Character.objects.get(owner=creator).portrait.name
    assert re.fullmatch(rf"portraits/{GENERATED}\.gif", name), name
    assert [path.parent.name for path in media_in_tmp.rglob("*.*")] == ["portraits"]


def card_png(name: str) -> bytes:
    """A character card PNG (a chara tEXt chunk, base64 JSON) for a character called `name`."""
    card = json.dumps(
        {
            "spec": "chara_card_v2",
            "spec_version": "2.0",
            "data": {"name": name, "description": "A keeper.", "first_mes": "Hello."},
        }
    )
    body = b"chara\0" + base64.b64encode(card.encode())
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    image = image_bytes("PNG")
    return image[:-12] + chunk + image[-12:]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(alphabet="ab/.\\: ", min_size=1, max_size=30).filter(str.strip))
def test_a_character_s_name_never_shapes_its_portrait_s_path(name: str, media_in_tmp: Path) -> None:
    [created] = content_import(data=card_png(name), owner=UserFactory())
    portrait = Character.objects.get(pk=created["id"]).portrait.name
    assert re.fullmatch(rf"portraits/{GENERATED}\.png", portrait), portrait
    assert {path.parent for path in media_in_tmp.rglob("*") if path.is_file()} == {media_in_tmp / "portraits"}
