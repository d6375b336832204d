"""The API's JSON parser: DRF's, with a limit on nesting, so that a nesting bomb is a 400 naming its fault.

DRF's own parser recurses once per level: a body nested thousands deep raises RecursionError, which no
handler catches (a 500). The size is bounded before any parser runs: DRF reads a JSON body through
`request.body`, which refuses more than DATA_UPLOAD_MAX_MEMORY_SIZE (common.apis answers that with a 413).
"""

from __future__ import annotations

from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Our documents nest a handful of levels (a world's characters' fields); a nesting bomb needs hundreds.
MAX_JSON_DEPTH = 64


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and objects in `value` nest more than `limit` deep; iterative, so a deep value cannot
    make the check itself hit the recursion limit."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class BoundedJSONParser(JSONParser):
    """JSON nested at most MAX_JSON_DEPTH levels deep."""

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None) -> Any:
        too_deep = f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels"
        try:
            value = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(too_deep) from None
        if json_depth_exceeds(value, MAX_JSON_DEPTH):
            raise ParseError(too_deep)
        return value
