"""Export a character, lorebook, story or world to a file other tools (or another Worldloom) can read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from worlds.exports import EXPORT_FORMATS, EXPORT_MODELS, content_export

ALL_FORMATS = sorted({name for names in EXPORT_FORMATS.values() for name in names})


class Command(BaseCommand):
    help = "Write TYPE ID as --format to -o PATH: card-png / card-json, lorebook / world-info, twee, cartridge."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("type", choices=sorted(EXPORT_MODELS))
        parser.add_argument("id", type=int)
        parser.add_argument("--format", dest="export_format", choices=ALL_FORMATS)
        parser.add_argument("-o", "--output", type=Path, required=True)

    def handle(self, *args: Any, type: str, id: int, export_format: str | None, output: Path, **_: Any) -> None:  # noqa: A002
        content = EXPORT_MODELS[type].objects.filter(pk=id).first()
        if content is None:
            raise CommandError(f"no {type} with id {id}")
        try:
            export = content_export(kind=type, content=content, export_format=export_format or EXPORT_FORMATS[type][0])
        except ValueError as error:
            raise CommandError(str(error)) from None
        output.write_bytes(export.data)
        self.stdout.write(f"wrote {output} ({len(export.data)} bytes, {export.content_type})")
