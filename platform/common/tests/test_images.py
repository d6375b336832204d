from __future__ import annotations

import io
import struct
import zlib

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from common.images import image_validator


def png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 40, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def upload(data: bytes, name: str = "cover.png") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="image/png")


def bomb_png(side: int) -> bytes:
    """A tiny PNG whose header claims side x side pixels (its data is a few bytes of compressed zeros)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def test_a_small_png_is_accepted_and_left_readable() -> None:
    file = upload(png(64, 48))
    image_validator(file)
    assert Image.open(file).size == (64, 48)


def test_an_svg_with_script_is_refused_whatever_its_name() -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    with pytest.raises(ValidationError, match="not an image we can read"):
        image_validator(upload(svg, "cover.png"))


def test_a_decompression_bomb_is_refused_before_decoding() -> None:
    with pytest.raises(ValidationError, match="far too many pixels"):
        image_validator(upload(bomb_png(20000)))


def test_an_oversized_file_is_refused() -> None:
    with pytest.raises(ValidationError, match="at most 5 MiB"):
        image_validator(upload(b"\0" * (5 * 1024 * 1024 + 1)))


def test_an_image_too_large_on_a_side_is_refused() -> None:
    with pytest.raises(ValidationError, match="at most 4096"):
        image_validator(upload(png(5000, 10)))


def test_a_truncated_png_is_refused() -> None:
    with pytest.raises(ValidationError):
        image_validator(upload(png(64, 64)[:60]))
