"""The world cartridge: one zip holding a world document, its images and a manifest with provenance.

    manifest.json   {"format": "worldloom-cartridge", "format_version": 1, "provenance": {...}, "assets": [...]}
    world.json      the world document (worlds.documents)
    assets/<name>   each image the document names, under its storage name

Reading is defensive, since a cartridge is a file from anywhere: member names are checked (no absolute
paths, no `..`), sizes are bounded before anything is decompressed, and only listed assets are read.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

from worlds.document_schema import document_problem
from worlds.formats import FormatError
from worlds.formats.json_input import load_json

CARTRIDGE_FORMAT = "worldloom-cartridge"
CARTRIDGE_VERSION = 1
MAX_CARTRIDGE_BYTES = 64 * 1024 * 1024
MAX_MEMBER_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 128 * 1024 * 1024  # uncompressed: a zip bomb stops here
MAX_MEMBERS = 500
# What zipfile raises for a damaged archive or member: a bad CRC or header, a broken deflate stream, an
# encrypted or unsupported member, a truncated file.
UNREADABLE_ZIP = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError, OSError)


@dataclass(frozen=True)
class Cartridge:
    manifest: dict[str, Any]
    document: dict[str, Any]
    assets: dict[str, bytes]  # storage name -> bytes


def image_names(document: dict[str, Any]) -> list[str]:
    """Every storage name of an image the document refers to."""
    world = document.get("world", {})
    names = [world.get("cover_image", ""), *world.get("reference_images", [])]
    names += [character.get("portrait", "") for character in document.get("characters", [])]
    return sorted({name for name in names if isinstance(name, str) and name})


def cartridge_write(*, document: dict[str, Any], assets: dict[str, bytes], provenance: dict[str, Any]) -> bytes:
    manifest = {
        "format": CARTRIDGE_FORMAT,
        "format_version": CARTRIDGE_VERSION,
        "provenance": provenance,
        "assets": sorted(assets),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
        archive.writestr("world.json", json.dumps(document, indent=2, sort_keys=True))
        for name, data in sorted(assets.items()):
            archive.writestr(f"assets/{name}", data)
    return buffer.getvalue()


def cartridge_read(data: bytes) -> Cartridge:
    if len(data) > MAX_CARTRIDGE_BYTES:
        raise FormatError("cartridge", "", f"the file is over {MAX_CARTRIDGE_BYTES // 1048576} MiB")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except UNREADABLE_ZIP as error:
        raise FormatError("cartridge", "", f"not a readable zip ({error})") from None
    with archive:
        members = {info.filename: info for info in archive.infolist() if not info.is_dir()}
        check_members(members)
        manifest = read_json(archive, members, "manifest.json")
        if manifest.get("format") != CARTRIDGE_FORMAT or manifest.get("format_version") != CARTRIDGE_VERSION:
            raise FormatError("cartridge", "manifest.json", f"not a {CARTRIDGE_FORMAT} of version {CARTRIDGE_VERSION}")
        document = read_json(archive, members, "world.json")
        problem = document_problem(document)
        if problem is not None:
            where, message = problem
            raise FormatError("cartridge", f"world.json {where}", message)
        assets = {}
        for name in image_names(document):
            member = f"assets/{name}"
            if member not in members:
                raise FormatError("cartridge", member, "the world refers to this image but the cartridge lacks it")
            assets[name] = member_read(archive, members[member])
    return Cartridge(manifest=manifest, document=document, assets=assets)


def check_members(members: dict[str, zipfile.ZipInfo]) -> None:
    if len(members) > MAX_MEMBERS:
        raise FormatError("cartridge", "", f"{len(members)} files; at most {MAX_MEMBERS}")
    total = 0
    for name, info in members.items():
        if name.startswith("/") or "\\" in name or ".." in name.split("/"):
            raise FormatError("cartridge", name, "unsafe file name")
        if info.file_size > MAX_MEMBER_BYTES:
            raise FormatError("cartridge", name, f"over {MAX_MEMBER_BYTES // 1048576} MiB uncompressed")
        total += info.file_size
    if total > MAX_TOTAL_BYTES:
        raise FormatError("cartridge", "", f"over {MAX_TOTAL_BYTES // 1048576} MiB uncompressed")


def member_read(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes; a damaged one (a bad CRC, a broken deflate stream, encryption) is a FormatError."""
    try:
        return archive.read(info)
    except UNREADABLE_ZIP as error:
        raise FormatError("cartridge", info.filename, f"cannot be read from the zip ({error})") from None


def read_json(archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], name: str) -> dict[str, Any]:
    if name not in members:
        raise FormatError("cartridge", name, "missing")
    value = load_json(member_read(archive, members[name]), "cartridge", where=name, max_bytes=MAX_MEMBER_BYTES)
    if not isinstance(value, dict):
        raise FormatError("cartridge", name, "must hold a JSON object")
    return value
