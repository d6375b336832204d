"""The file formats creators bring to Worldloom and take away, as pure Python (no Django).

Each format reads into frozen dataclasses, writes from the same dataclasses, and raises `FormatError` naming
the field or passage on bad input. Every reader refuses oversized input first (see `limits`).
Text stays text: escaping for HTML is the template's job.
"""

from __future__ import annotations

from worlds.formats.errors import FormatError

__all__ = ["FormatError"]
