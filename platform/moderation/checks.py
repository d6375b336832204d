"""The automated checks a submitted version goes through; each gives a verdict and the reason for it.

They read the version's frozen document (what would go live), never the working copy, except where noted.
Each check is a plain function of a version, so moderation.services can run one per Celery task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage

from common.images import image_validator
from inference.engine import preview_jpeg
from inference.narrative.safety import TermFilter, refused_severities
from moderation.models import CheckKind, Verdict
from worlds.categories import Category
from worlds.documents import world_document
from worlds.models import WorldVersion
from worlds.published import PublishedWorld, published_world
from worlds.selectors import world_problems

TERMS_FILE = Path(__file__).resolve().parent / "data" / "terms.json"
# Document keys whose values are identifiers or storage names rather than prose anyone reads.
NOT_PROSE = {"format", "key", "engine", "cover_image", "portrait", "reference_images", "lorebook", "lorebooks"}
PREVIEW_SIZE = (384, 216)  # 16:9, twice a gallery card's width on a phone
GREETING_SAMPLE_CHARACTERS = 280


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    image: bytes | None = None


@cache
def term_filter_load(path: Path = TERMS_FILE) -> TermFilter:
    return TermFilter.from_dict(json.loads(path.read_text()))


def document_texts(value: Any, place: str = "") -> Iterator[tuple[str, str]]:
    """Every string a person could read in a document, with its place ("characters[0].greeting")."""
    if isinstance(value, str):
        yield place, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in NOT_PROSE:
                yield from document_texts(item, f"{place}.{key}" if place else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from document_texts(item, f"{place}[{index}]")


def findings(version: WorldVersion, severity: str) -> dict[str, list[str]]:
    """Terms of one severity found in the document, by place."""
    terms = term_filter_load()
    found = {place: terms.found(text).get(severity, []) for place, text in document_texts(version.document)}
    return {place: hits for place, hits in found.items() if hits}


def described(found: dict[str, list[str]]) -> str:
    return "; ".join(f"{', '.join(repr(term) for term in hits)} in {place}" for place, hits in found.items())


def terms_check(version: WorldVersion) -> Outcome:
    blocked = findings(version, "blocked")
    if blocked:
        return Outcome(Verdict.FAIL, f"blocked terms: {described(blocked)}", {"blocked": blocked})
    return Outcome(Verdict.PASS, "no blocked terms")


def rating_check(version: WorldVersion) -> Outcome:
    """Terms the rating rules reserve for older audiences, against the rating the creator chose."""
    rating = published_world(version).world.content_rating
    refused = refused_severities(rating)
    mature = findings(version, "mature") if "mature" in refused else {}
    teen = findings(version, "teen") if "teen" in refused else {}
    if mature:
        return Outcome(
            Verdict.FLAG, f"rated {rating}, but the rules put these at mature: {described(mature)}", {"mature": mature}
        )
    if teen:
        return Outcome(
            Verdict.FLAG, f"rated everyone, but the rules put these at teen: {described(teen)}", {"teen": teen}
        )
    return Outcome(Verdict.PASS, f"nothing above the {rating} rating")


def published_images(published: PublishedWorld) -> list[tuple[str, str]]:
    world = published.world
    images = [("world.cover_image", world.cover_image)]
    images += [(f"world.reference_images[{index}]", name) for index, name in enumerate(world.reference_images)]
    images += [
        (f"characters[{index}].portrait", character.portrait) for index, character in enumerate(published.characters)
    ]
    return [(place, name) for place, name in images if name]


def images_check(version: WorldVersion) -> Outcome:
    """Every image the version names exists and passes the upload rules (type, size, dimensions)."""
    problems = {}
    images = published_images(published_world(version))
    for place, name in images:
        if not default_storage.exists(name):
            problems[place] = "the file is missing"
            continue
        with default_storage.open(name) as image:
            try:
                image_validator(image)
            except ValidationError as error:
                problems[place] = "; ".join(error.messages)
    if problems:
        reason = "; ".join(f"{place}: {problem}" for place, problem in problems.items())
        return Outcome(Verdict.FAIL, reason, {"problems": problems})
    return Outcome(Verdict.PASS, f"{len(images)} image(s) checked" if images else "no images")


def references_check(version: WorldVersion) -> Outcome:
    """Broken hooks, clues and story links. Publishing already refuses them, so this re-checks the working
    copy only while it still matches the version; once the creator edits on, the document is the one
    `world_publish` checked when it was submitted."""
    world = version.world
    if world_document(world) != version.document:
        return Outcome(Verdict.PASS, "checked when submitted; the working copy has changed since")
    problems = world_problems(world=world)
    if problems:
        return Outcome(Verdict.FAIL, "; ".join(problems), {"problems": problems})
    return Outcome(Verdict.PASS, "every hook, clue and story link leads somewhere")


def preview_check(version: WorldVersion) -> Outcome:
    """A first frame from the world's engine and a sample of the first character's greeting."""
    published = published_world(version)
    details: dict[str, Any] = {}
    problems = []
    characters = published.characters
    if characters:
        first = characters[0]
        greeting = first.greeting.replace("{{char}}", first.name).replace("{{user}}", "you")
        details |= {"character": first.name, "greeting": greeting[:GREETING_SAMPLE_CHARACTERS]}
    elif published.world.category == Category.CHARACTERS:
        problems.append("a work in Characters has no character to greet players")
    image = None
    try:
        image = preview_jpeg(published.engine_spec, *PREVIEW_SIZE)
    except ValueError as error:
        problems.append(f"the engine could not draw a first frame: {error}")
    if problems:
        return Outcome(Verdict.FLAG, "; ".join(problems), details, image)
    return Outcome(Verdict.PASS, "a first frame" + (" and a greeting" if characters else ""), details, image)


CHECKS: dict[CheckKind, Callable[[WorldVersion], Outcome]] = {
    CheckKind.TERMS: terms_check,
    CheckKind.RATING: rating_check,
    CheckKind.IMAGES: images_check,
    CheckKind.REFERENCES: references_check,
    CheckKind.PREVIEW: preview_check,
}
