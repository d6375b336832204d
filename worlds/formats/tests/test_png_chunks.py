"""PNG chunks read and written by hand: signature, CRCs, truncation and exact round trips."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import pytest

from worlds.formats import FormatError
from worlds.formats.limits import MAX_PNG_BYTES
from worlds.formats.png_chunks import PNG_SIGNATURE, read_chunks, text_chunk, text_chunks, write_chunks


def test_it_reads_every_chunk_of_a_real_png(fixture_bytes: Callable[[str], bytes]) -> None:
    chunks = read_chunks(fixture_bytes("plain_portrait.png"))
    kinds = [chunk.kind for chunk in chunks]
    assert kinds[0] == b"IHDR"
    assert kinds[-1] == b"IEND"
    assert b"IDAT" in kinds
    assert text_chunks(chunks) == {"software": "GIMP 2.10.36", "comment": "Saltmarsh Light at dusk"}


def test_writing_the_chunks_read_gives_back_the_same_bytes(fixture_bytes: Callable[[str], bytes]) -> None:
    png = fixture_bytes("eve_card_v3.png")
    assert write_chunks(read_chunks(png)) == png


def test_a_text_chunk_round_trips_its_keyword_and_text() -> None:
    chunk = text_chunk("chara", "eyJuYW1lIjoiRXZlIn0=")
    assert chunk.data == b"chara\x00eyJuYW1lIjoiRXZlIn0="
    assert text_chunks([chunk]) == {"chara": "eyJuYW1lIjoiRXZlIn0="}


def test_a_file_without_the_png_signature_is_refused() -> None:
    with pytest.raises(FormatError, match="signature: not a PNG file"):
        read_chunks(b"GIF89a" + b"\x00" * 40)


def test_a_truncated_png_is_refused(fixture_bytes: Callable[[str], bytes]) -> None:
    with pytest.raises(FormatError, match="file is truncated"):
        read_chunks(fixture_bytes("truncated_card.png"))


def test_a_png_cut_between_chunks_is_refused(fixture_bytes: Callable[[str], bytes]) -> None:
    png = fixture_bytes("plain_portrait.png")
    with pytest.raises(FormatError, match="ends before the IEND chunk"):
        read_chunks(png[:-12])  # IEND is exactly 12 bytes


def test_a_corrupted_byte_fails_the_crc(fixture_bytes: Callable[[str], bytes]) -> None:
    png = bytearray(fixture_bytes("plain_portrait.png"))
    png[len(PNG_SIGNATURE) + 8 + 2] ^= 0xFF  # inside IHDR's data
    with pytest.raises(FormatError) as raised:
        read_chunks(bytes(png))
    assert str(raised.value) == "png: chunk 1 at byte 8: CRC mismatch in the IHDR chunk: the file is corrupt"


def test_a_png_must_start_with_ihdr() -> None:
    data = b"hello"
    chunk = struct.pack(">I4s", len(data), b"tEXt") + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    with pytest.raises(FormatError, match="first chunk is tEXt, not IHDR"):
        read_chunks(PNG_SIGNATURE + chunk)


def test_an_oversized_png_is_refused_before_reading() -> None:
    with pytest.raises(FormatError, match="over the limit of 8388608 bytes"):
        read_chunks(PNG_SIGNATURE + b"\x00" * MAX_PNG_BYTES)


def test_the_format_name_of_errors_is_the_callers() -> None:
    with pytest.raises(FormatError) as raised:
        read_chunks(b"not a png", format_name="card-png")
    assert raised.value.format == "card-png"
