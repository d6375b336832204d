"""The JSON Schema of a world document (worlds.documents), checked before a document from outside is read.

Each entity's fields come from its model, so the schema follows the models: texts are strings, numbers
numbers, flags booleans, JSON fields any JSON, and a field the model lacks is refused. The shape around them
(lists of objects, keys that refer to other entities as strings) is written here. The schema settles types
and shape only; the models' validation still decides lengths, ranges and choices, and says so by field.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import models
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from worlds.documents import DOCUMENT_FORMAT, DOCUMENT_VERSION, NOT_CONTENT_FIELDS
from worlds.models import Beat, Character, Clue, Hook, HookBranch, Lorebook, LoreEntry, Story, World

TEXT = {"type": "string"}
TEXTS = {"type": "array", "items": TEXT}


def field_schema(field: models.Field) -> dict[str, Any]:
    if isinstance(field, models.JSONField):
        # A JSON field holds what its default is (an object or a list); what goes inside is the model's to check.
        default = field.get_default()
        if isinstance(default, dict | list):
            return {"type": "object" if isinstance(default, dict) else "array"}
        return {}
    if isinstance(field, models.BooleanField):
        kind = "boolean"
    elif isinstance(field, models.IntegerField):
        kind = "integer"
    elif isinstance(field, models.FloatField):
        kind = "number"
    else:  # CharField, TextField, SlugField, and file fields as their storage names
        kind = "string"
    return {"type": [kind, "null"] if field.null else kind}


def entity_schema(model: type[models.Model], **parts: dict[str, Any]) -> dict[str, Any]:
    """An object of `model`'s content fields and the document's `parts` for it (its key, its nested rows)."""
    fields = {
        field.name: field_schema(field)
        for field in model._meta.concrete_fields
        if not field.is_relation and field.name not in NOT_CONTENT_FIELDS
    }
    return {"type": "object", "properties": fields | parts, "additionalProperties": False}


def many(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": schema}


@cache
def document_validator() -> Draft202012Validator:
    schema = {
        "type": "object",
        "required": ["format", "format_version", "world"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": DOCUMENT_FORMAT},
            "format_version": {"const": DOCUMENT_VERSION},
            "world": entity_schema(World, tags=TEXTS, reference_images=TEXTS, lorebooks=TEXTS),
            "lorebooks": many(entity_schema(Lorebook, key=TEXT, entries=many(entity_schema(LoreEntry)))),
            "characters": many(
                entity_schema(
                    Character, key=TEXT, lorebook={"type": ["string", "null"]}, clues=many(entity_schema(Clue))
                )
            ),
            "hooks": many(entity_schema(Hook, branches=many(entity_schema(HookBranch)))),
            "stories": many(entity_schema(Story, characters=TEXTS, beats=many(entity_schema(Beat)))),
        },
    }
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def document_problem(document: Any) -> tuple[str, str] | None:
    """(where, what) for the most telling way `document` breaks the schema, or None when it fits.

    `where` is a JSON path such as `$.world.reference_images[0]`.
    """
    error = best_match(document_validator().iter_errors(document))
    if error is None:
        return None
    if error.validator == "additionalProperties":
        # Worded as the model rows word it (worlds.services.saved), rather than jsonschema's repr of a tuple.
        unknown = sorted(set(error.instance) - set(error.schema["properties"]))
        return error.json_path, f"unknown fields {', '.join(unknown)}"[:300]
    return error.json_path, error.message[:300]
