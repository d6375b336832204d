"""The one error every format parser raises on bad input, naming the format and the place in the file."""

from __future__ import annotations


class FormatError(ValueError):
    """A file that does not follow its format, with the field path or passage where it went wrong."""

    def __init__(self, format: str, where: str, message: str) -> None:  # noqa: A002 - the attribute callers read
        self.format = format
        self.where = where
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.where:
            return f"{self.format}: {self.where}: {self.message}"
        return f"{self.format}: {self.message}"
