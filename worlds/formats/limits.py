"""Input limits every parser enforces before trusting a file, so an upload cannot exhaust the server.

The sizes are generous for real files: the largest character cards with an embedded lorebook and a
portrait stay well under 8 MiB, and lorebooks and Twee stories of a few thousand entries under 2 MiB.
"""

from __future__ import annotations

from worlds.formats.errors import FormatError

MEBIBYTE = 1024 * 1024

MAX_PNG_BYTES = 8 * MEBIBYTE
MAX_JSON_BYTES = 2 * MEBIBYTE  # also the JSON decoded from a PNG's card chunk
MAX_TWEE_BYTES = 2 * MEBIBYTE
MAX_JSON_DEPTH = 64  # cards nest four levels; extensions get room, a nesting bomb does not
MAX_LORE_ENTRIES = 5_000
MAX_PASSAGES = 5_000


def check_size(data: bytes | str, limit: int, format_name: str) -> None:
    """Refuse input longer than `limit` bytes (text is measured in UTF-8)."""
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        raise FormatError(format_name, "", f"file is {size} bytes, over the limit of {limit} bytes")
