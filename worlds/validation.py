"""Checks of authored content that Django's field validation cannot express, raising ValidationError by field.

The same checks serve the studio's forms, the API and imports, so a creator gets the same message wherever
they make the mistake.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from inference.world import WorldSpec, parse_event
from workers.selectors import engines_offered

MAX_LIST_ITEMS = 100
MAX_ITEM_LENGTH = 500


def engine_clean(engine: str, parameters: dict[str, Any]) -> None:
    """The engine exists, and its parameters form a valid world spec (every engine takes one)."""
    engines = engines_offered()
    if engine not in engines:
        raise ValidationError({"engine": f"unknown engine {engine!r}; available: {', '.join(engines)}"})
    try:
        WorldSpec.from_dict(parameters)
    except ValueError as error:
        raise ValidationError({"engine_parameters": str(error)}) from None


def strings_clean(field: str, value: Any, *, required: bool = False) -> None:
    """`value` is a list of short non-empty strings (keys, examples, greetings, tags)."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ValidationError({field: "must be a list of non-empty texts"})
    if required and not value:
        raise ValidationError({field: "needs at least one entry"})
    if len(value) > MAX_LIST_ITEMS:
        raise ValidationError({field: f"has {len(value)} entries; at most {MAX_LIST_ITEMS} are allowed"})
    too_long = [item for item in value if len(item) > MAX_ITEM_LENGTH]
    if too_long:
        raise ValidationError({field: f"entries are at most {MAX_ITEM_LENGTH} characters: {too_long[0][:40]!r}…"})


def hook_trigger_clean(trigger: str, value: Any) -> None:
    """The trigger's value has the shape its kind needs (see Hook.trigger_value)."""
    if not isinstance(value, dict):
        raise ValidationError({"trigger_value": "must be an object"})
    if trigger == "area":
        numbers = [value.get(name) for name in ("x", "y", "radius")]
        if not all(isinstance(number, int | float) and not isinstance(number, bool) for number in numbers):
            raise ValidationError({"trigger_value": "an area needs numbers x, y and radius (in map cells)"})
        if value["radius"] <= 0:
            raise ValidationError({"trigger_value": "an area's radius must be positive"})
    elif trigger == "keywords":
        strings_clean("trigger_value", value.get("keywords"), required=True)
    elif trigger in ("intent", "beat", "flag"):  # any other kind is refused by the field's choices
        text = value.get(trigger)
        if not isinstance(text, str) or not text.strip():
            raise ValidationError({"trigger_value": f"a {trigger} trigger needs a non-empty '{trigger}'"})


EFFECT_KEYS = {"set_flags", "reveal_clues", "world_events", "move_to_beat", "narration"}


def branch_effects_clean(effects: Any) -> None:
    """A branch's effects: flags, clues, world events from the engine's vocabulary, a beat, narration."""
    if not isinstance(effects, dict):
        raise ValidationError({"effects": "must be an object"})
    unknown = sorted(set(effects) - EFFECT_KEYS)
    if unknown:
        raise ValidationError(
            {"effects": f"unknown effects {', '.join(unknown)}; known: {', '.join(sorted(EFFECT_KEYS))}"}
        )
    for name in ("set_flags", "reveal_clues"):
        if name in effects:
            strings_clean("effects", effects[name])
    events = effects.get("world_events", [])
    if not isinstance(events, list):
        raise ValidationError({"effects": "world_events must be a list of events"})
    for event in events:
        try:
            parse_event(event)
        except ValueError as error:
            raise ValidationError({"effects": f"world event {event!r}: {error}"}) from None
    for name in ("move_to_beat", "narration"):
        if name in effects and not isinstance(effects[name], str):
            raise ValidationError({"effects": f"{name} must be a text"})


def choices_clean(choices: Any) -> None:
    """A beat's authored choices: a list of {"text", "to"}."""
    if not isinstance(choices, list) or not all(
        isinstance(choice, dict)
        and set(choice) == {"text", "to"}
        and all(isinstance(choice[key], str) and choice[key].strip() for key in ("text", "to"))
        for choice in choices
    ):
        raise ValidationError({"choices": 'must be a list of {"text": …, "to": beat name}'})
