"""Exporting authored content in the formats other tools read: card PNG/JSON, Twee 3, lorebooks, cartridges."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.files.storage import default_storage
from django.utils import timezone
from django.utils.text import slugify

from worlds import formats
from worlds.cartridge import cartridge_write, image_names
from worlds.documents import world_document
from worlds.interchange import character_card, lorebook_record, twine_story
from worlds.models import Character, Lorebook, Story, World
from worlds.selectors import world_latest_version

# What each kind of content can be exported as; the first is the default.
EXPORT_FORMATS: dict[str, tuple[str, ...]] = {
    "character": ("card-png", "card-json"),
    "lorebook": ("lorebook", "world-info"),
    "story": ("twee",),
    "world": ("cartridge",),
}
EXPORT_MODELS = {"character": Character, "lorebook": Lorebook, "story": Story, "world": World}


@dataclass(frozen=True)
class Export:
    filename: str
    content_type: str
    data: bytes


def content_export(*, kind: str, content: Character | Lorebook | Story | World, export_format: str) -> Export:
    if export_format not in EXPORT_FORMATS[kind]:
        raise ValueError(f"a {kind} exports as {' or '.join(EXPORT_FORMATS[kind])}, not {export_format}")
    stem = slugify(str(content)) or kind
    if export_format == "card-png":
        portrait = read_file(content.portrait.name) if content.portrait else None
        return Export(f"{stem}.png", "image/png", formats.card_to_png(character_card(content), portrait))
    if export_format == "card-json":
        return Export(f"{stem}.json", "application/json", formats.card_to_json(character_card(content), version=3))
    if export_format == "lorebook":
        return Export(f"{stem}.lorebook.json", "application/json", formats.lorebook_to_v3(lorebook_record(content)))
    if export_format == "world-info":
        return Export(
            f"{stem}.world-info.json", "application/json", formats.lorebook_to_world_info(lorebook_record(content))
        )
    if export_format == "twee":
        return Export(
            f"{stem}.twee", "text/plain; charset=utf-8", formats.twee_serialise(twine_story(content)).encode()
        )
    return Export(f"{stem}.worldloom.zip", "application/zip", world_cartridge(content))


def world_cartridge(world: World) -> bytes:
    document = world_document(world)
    latest = world_latest_version(world=world)
    provenance = {
        "title": world.title,
        "creator": world.owner.username,
        "source": world.slug,
        "published_version": latest.number if latest else None,
        "remixed_from": {
            "world": world.remixed_from.world.slug,
            "version": world.remixed_from.number,
            "creator": world.remixed_from.world.owner.username,
        }
        if world.remixed_from
        else None,
        "exported_at": timezone.now().isoformat(),
        "exported_by": "Worldloom",
    }
    assets = {name: read_file(name) for name in image_names(document)}
    return cartridge_write(document=document, assets=assets, provenance=provenance)


def read_file(name: str) -> bytes:
    with default_storage.open(name, "rb") as file:
        return file.read()
