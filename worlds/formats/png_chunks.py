"""PNG chunk reading and writing, enough to carry character cards in `tEXt` chunks.

Follows the PNG specification (W3C, third edition): an 8-byte signature, then chunks of
`length (4 bytes, big-endian) | type (4 bytes) | data | CRC-32 of type and data`, starting with IHDR and
ending with IEND. Written by hand with struct and zlib.crc32 because Pillow's text chunk handling
re-encodes and reorders chunks, and a card must come back byte for byte. Pixel data is never decoded,
so a decompression bomb in IDAT costs nothing here.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from worlds.formats.errors import FormatError
from worlds.formats.limits import MAX_PNG_BYTES, check_size

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_LENGTH_AND_TYPE = struct.Struct(">I4s")
_CRC = struct.Struct(">I")


@dataclass(frozen=True)
class PngChunk:
    """One chunk: its four-letter type (b"IHDR", b"tEXt", ...) and its data."""

    kind: bytes
    data: bytes


def read_chunks(png: bytes, *, format_name: str = "png") -> list[PngChunk]:
    """Every chunk up to and including IEND, after checking the signature, lengths and CRCs."""
    check_size(png, MAX_PNG_BYTES, format_name)
    if not png.startswith(PNG_SIGNATURE):
        raise FormatError(format_name, "signature", "not a PNG file")
    chunks: list[PngChunk] = []
    offset = len(PNG_SIGNATURE)
    while True:
        where = f"chunk {len(chunks) + 1} at byte {offset}"
        if offset + _LENGTH_AND_TYPE.size > len(png):
            raise FormatError(format_name, where, "file is truncated: it ends before the IEND chunk")
        length, kind = _LENGTH_AND_TYPE.unpack_from(png, offset)
        data_start = offset + _LENGTH_AND_TYPE.size
        data_end = data_start + length
        if data_end + _CRC.size > len(png):
            raise FormatError(format_name, where, f"file is truncated inside the {_kind_name(kind)} chunk")
        data = png[data_start:data_end]
        (stored_crc,) = _CRC.unpack_from(png, data_end)
        if zlib.crc32(kind + data) != stored_crc:
            raise FormatError(format_name, where, f"CRC mismatch in the {_kind_name(kind)} chunk: the file is corrupt")
        if not chunks and kind != b"IHDR":
            raise FormatError(format_name, where, f"first chunk is {_kind_name(kind)}, not IHDR")
        chunks.append(PngChunk(kind, data))
        offset = data_end + _CRC.size
        # Bytes after IEND are ignored, as every decoder does; some tools append trailers there.
        if kind == b"IEND":
            return chunks


def write_chunks(chunks: list[PngChunk]) -> bytes:
    """A PNG file made of `chunks`, with lengths and CRCs computed."""
    parts = [PNG_SIGNATURE]
    for chunk in chunks:
        parts.append(_LENGTH_AND_TYPE.pack(len(chunk.data), chunk.kind))
        parts.append(chunk.data)
        parts.append(_CRC.pack(zlib.crc32(chunk.kind + chunk.data)))
    return b"".join(parts)


def text_chunk(keyword: str, text: str) -> PngChunk:
    """A tEXt chunk: Latin-1 keyword, a zero byte, Latin-1 text (cards store ASCII base64 there)."""
    return PngChunk(b"tEXt", keyword.encode("latin-1") + b"\x00" + text.encode("latin-1"))


def text_chunks(chunks: list[PngChunk]) -> dict[str, str]:
    """The tEXt chunks' texts by lower-cased keyword; when a keyword repeats, the first one counts."""
    texts: dict[str, str] = {}
    for chunk in chunks:
        if chunk.kind != b"tEXt" or b"\x00" not in chunk.data:
            continue
        keyword, _, text = chunk.data.partition(b"\x00")
        texts.setdefault(keyword.decode("latin-1").lower(), text.decode("latin-1"))
    return texts


def text_chunk_keyword(chunk: PngChunk) -> str | None:
    """The lower-cased keyword of a tEXt, zTXt or iTXt chunk; None for other chunks."""
    if chunk.kind not in (b"tEXt", b"zTXt", b"iTXt"):
        return None
    return chunk.data.partition(b"\x00")[0].decode("latin-1").lower()


def _kind_name(kind: bytes) -> str:
    return kind.decode("latin-1") if kind.isalpha() else repr(kind)
