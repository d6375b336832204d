"""Security settings as deployed, and the abuse they stop: password guessing, hostile uploads, injected script."""

from __future__ import annotations

import base64
import io
import os
import secrets
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from accounts.tests.factories import PASSWORD, UserFactory
from common.images import image_reencoded
from tests.fixtures import SignIn
from worlds.models import Character, World
from worlds.tests.test_studio_pages import world_data

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.django_db

PRODUCTION_SETTINGS_PRINTED = (
    "from django.conf import settings; "
    "print(settings.MODERATORS_REQUIRE_SECOND_FACTOR, settings.SESSION_COOKIE_SECURE, settings.SECURE_HSTS_SECONDS)"
)


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def bomb_png(side: int, *extra_chunks: bytes) -> bytes:
    """A PNG of a few dozen bytes whose header claims side x side pixels: decoded, it would fill gigabytes."""
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            png_chunk(b"IHDR", header),
            *extra_chunks,
            png_chunk(b"IDAT", zlib.compress(b"\0" * 64)),
            png_chunk(b"IEND", b""),
        ]
    )


def png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 90, 160)).save(buffer, format="PNG")
    return buffer.getvalue()


def png_over_five_mebibytes() -> bytes:
    """A valid PNG padded past the 5 MiB limit with a private ancillary chunk readers skip."""
    image = png(16, 16)
    padding = png_chunk(b"zzPd", secrets.token_bytes(5 * 1024 * 1024))
    return image[:-12] + padding + image[-12:]


@pytest.fixture
def rate_limits_forgotten() -> Iterator[None]:
    """allauth counts failed log-ins in the cache, which outlives one test (and, as Redis, the test run)."""
    cache.clear()
    yield
    cache.clear()


def test_check_deploy_passes_with_production_settings(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "HTTPS": "true",
        "ALLOWED_HOSTS": "example.org",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'production.sqlite3'}",
        "WORLDLOOM_DATA_DIR": str(tmp_path),
    }
    environment.pop("MODERATORS_REQUIRE_SECOND_FACTOR", None)
    check = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    # check --deploy passes with HTTPS off too if these are wrong; production must have them on.
    shown = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", PRODUCTION_SETTINGS_PRINTED],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.stdout.split() == ["True", "True", "31536000"], shown.stdout + shown.stderr


def test_every_page_carries_a_content_security_policy_that_runs_only_our_scripts(client: Client) -> None:
    policy = client.get(reverse("gallery:home")).headers["Content-Security-Policy"]
    directives = dict(directive.strip().split(" ", 1) for directive in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["style-src"] == "'self'"


def test_the_api_docs_page_loads_its_script_from_a_file_not_inline(client: Client) -> None:
    page = client.get(reverse("api-docs"))
    assert "'unsafe-inline'" not in page.headers["Content-Security-Policy"].split("script-src")[1].split(";")[0]
    html = page.content.decode()
    assert "<script>" not in html
    script = client.get(reverse("api-docs"), {"script": ""})
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()


def test_the_sixth_failed_log_in_to_one_account_is_refused_even_with_the_right_password(
    client: Client, rate_limits_forgotten: None
) -> None:
    person = UserFactory()
    for attempt in range(5):
        guess = client.post(reverse("account_login"), {"login": person.username, "password": f"guess-{attempt}"})
        assert "The username and/or password you specified are not correct." in guess.content.decode()
    refused = client.post(reverse("account_login"), {"login": person.username, "password": PASSWORD})
    assert refused.status_code == 200
    assert "Too many failed login attempts. Try again later." in refused.content.decode()
    assert not refused.context["user"].is_authenticated


def test_another_account_can_still_log_in_while_one_is_throttled(client: Client, rate_limits_forgotten: None) -> None:
    guessed, other = UserFactory(), UserFactory()
    for attempt in range(6):
        client.post(reverse("account_login"), {"login": guessed.username, "password": f"guess-{attempt}"})
    response = client.post(reverse("account_login"), {"login": other.username, "password": PASSWORD})
    assert response.status_code == 302


# Django's form field opens every upload with Pillow first and answers its own message for what Pillow refuses
# outright (far past the pixel limit, or no image at all); the model's validator words the rest.
NOT_AN_IMAGE = "Upload a valid image. The file you uploaded was either not an image or a corrupted image."


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (png_over_five_mebibytes(), "at most 5 MiB"),
        (bomb_png(20000), NOT_AN_IMAGE),
        (bomb_png(10000), "far too many pixels"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', NOT_AN_IMAGE),
        (png(4097, 8), "at most 4096 pixels on a side"),
    ],
    ids=["over the size limit", "decompression bomb", "bomb within twice the pixel limit", "svg", "too wide"],
)
@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")  # Django's form field opens it first
def test_the_studio_refuses_a_hostile_cover_image_and_says_why(
    signed_in: SignIn, content: bytes, message: str, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    upload = SimpleUploadedFile("cover.png", content, content_type="image/png")
    page = signed_in(UserFactory()).post(reverse("worlds:world_create"), world_data(cover_image=upload))
    assert page.status_code == 200
    assert message in page.content.decode()
    assert not World.objects.exists()
    assert not any(tmp_path.rglob("*.*"))


def test_the_import_api_refuses_a_character_card_in_a_decompression_bomb(
    signed_in: SignIn, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    card = b'{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Eve", "description": "A keeper."}}'
    text = png_chunk(b"tEXt", b"chara\0" + base64.b64encode(card))
    upload = SimpleUploadedFile("eve.png", bomb_png(30000, text), content_type="image/png")
    response = signed_in(UserFactory()).post(reverse("content-import"), {"file": upload})
    assert response.status_code == 400
    assert "far too many pixels" in str(response.json())
    assert not Character.objects.exists()
    assert not any(tmp_path.rglob("*.*"))


@settings(max_examples=30, deadline=None)
@given(
    payload=st.binary(min_size=8, max_size=200).map(lambda noise: b"<script>" + noise),
    kind=st.sampled_from(["PNG", "GIF", "JPEG", "WEBP"]),
)
def test_re_encoding_keeps_the_pixels_and_drops_whatever_rode_along(payload: bytes, kind: str) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (6, 6), (30, 90, 160)).save(buffer, format=kind)
    image = buffer.getvalue()
    carriers = [image + payload]  # after the image's end
    if kind == "PNG":
        carriers.append(image[:-12] + png_chunk(b"tEXt", b"comment\0" + payload) + image[-12:])  # in metadata
    for carrier in carriers:
        encoded = image_reencoded(carrier)
        assert (encoded.format, encoded.extension in {"png", "gif", "jpg", "webp"}) == (kind, True)
        assert b"<script>" not in encoded.data
        again = Image.open(io.BytesIO(encoded.data))
        assert (again.format, again.size) == (kind, (6, 6))
