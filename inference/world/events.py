"""The world events vocabulary: the structured events that change a running world, and their parser.

Events arrive as small dicts (from the narrative layer, which maps typed prompts onto them, or from the
platform for Live participants) and are applied by the simulator at the start of a tick. Their effect is
immediate and persists in the world state, and so in every snapshot, until another event changes it.

| event | dict | effect |
| --- | --- | --- |
| night | `{"kind": "night"}` | dark sky with stars and a moon, dim bluish light; lanterns glow |
| dawn | `{"kind": "dawn"}` | a low warm sun, orange and violet sky, softer light |
| day | `{"kind": "day"}` | full light under the world's own sky colour |
| snow | `{"kind": "snow"}` | falling snowflakes and a white ground; replaces rain |
| rain | `{"kind": "rain"}` | falling rain streaks, a greyer and darker scene; replaces snow |
| fog | `{"kind": "fog"}` | distance fades into fog |
| clear | `{"kind": "clear", "object": "fog"}` | ends snow, rain and fog, or only the one `object` names |
| spawn | `{"kind": "spawn", "object": "tower", "color": [r, g, b]}` | an object a few steps ahead, before the wall |
| join | `{"kind": "join", "name": "ana", "color": [r, g, b]}` | a Live participant's avatar appears by the player |
| move | `{"kind": "move", "name": "ana", "action": 5}` | the keys that participant holds, until the next move |
| leave | `{"kind": "leave", "name": "ana"}` | the participant's avatar disappears |
| approach | `{"kind": "approach", "name": "Eve"}` | the world's character walks up to the player and faces them |

`color` is optional. An avatar walks every tick with the keys (an `Action` bitmask) of its latest `move`.
Object kinds for `spawn` (and for a world spec's `objects`): tower, tree, lantern, crystal, creature.
Spawned objects are decorations: they do not block walking, so one spawned on the player cannot trap them.
A world holds at most `MAX_OBJECTS` objects; a spawn beyond that removes the oldest spawned object first, so a
session's state stays bounded however long it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TIME_OF_DAY_KINDS = ("day", "dawn", "night")
WEATHER_KINDS = ("clear", "snow", "rain")
# What a `clear` may end alone, and how the narrator says it ends.
CLEARED_NARRATIONS = {"snow": "The snow stops.", "rain": "The rain stops.", "fog": "The fog lifts."}
OBJECT_KINDS = ("tower", "tree", "lantern", "crystal", "creature")
EVENT_KINDS = ("night", "dawn", "day", "snow", "rain", "fog", "clear", "spawn", "join", "move", "leave", "approach")

# Default colours for objects spawned without one: what a reader would picture for each kind.
OBJECT_DEFAULT_COLORS: dict[str, tuple[int, int, int]] = {
    "tower": (150, 140, 130),
    "tree": (40, 130, 50),
    "lantern": (255, 200, 90),
    "crystal": (120, 220, 255),
    "creature": (170, 60, 160),
}
# What the narrator says as each kind of event happens; "{object}" and "{name}" are the event's fields. A move is
# too small to tell.
EVENT_NARRATIONS: dict[str, str] = {
    "night": "Night falls.",
    "dawn": "Dawn breaks.",
    "day": "Daylight fills the sky.",
    "snow": "Snow begins to fall.",
    "rain": "Rain begins to fall.",
    "fog": "Fog rolls in.",
    "clear": "The sky clears.",
    "spawn": "A {object} appears.",
    "join": "{name} joins you.",
    "move": "",
    "leave": "{name} leaves.",
    "approach": "{name} comes over to you.",
}
AVATAR_DEFAULT_COLOR = (230, 120, 40)
# A participant's username (Django allows 150 characters) or a character's name (the platform allows 100).
MAX_NAME_LENGTH = 150
# The six bits of `Action`; repeated here rather than imported so that this module stays a leaf.
MAX_ACTION = 63

Color = tuple[int, int, int]


@dataclass(frozen=True)
class WorldEvent:
    """One parsed world event; only the fields its kind uses are set."""

    kind: str
    object: str | None = None
    color: Color | None = None
    name: str | None = None
    action: int | None = None


def narration(events: list[dict[str, Any]]) -> str:
    """The change `events` make, in words: "Night falls. A lantern appears." (each phrase once)."""
    phrases = [
        CLEARED_NARRATIONS[event["object"]]
        if event.get("kind") == "clear" and event.get("object") in CLEARED_NARRATIONS
        else EVENT_NARRATIONS.get(str(event.get("kind")), "").format(object=event.get("object"), name=event.get("name"))
        for event in events
    ]
    return " ".join(dict.fromkeys(phrase for phrase in phrases if phrase))


def parse_color(value: Any, *, field: str) -> Color:
    """An `[r, g, b]` list of integers 0..255 as a tuple, or ValueError naming `field`."""
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 3
        or not all(isinstance(channel, int) and not isinstance(channel, bool) for channel in value)
        or not all(0 <= channel <= 255 for channel in value)
    ):
        raise ValueError(f"{field} must be [r, g, b] with integers 0..255, got {value!r}")
    return (value[0], value[1], value[2])


def _parse_name(event: dict[str, Any]) -> str:
    name = event.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"a {event['kind']!r} event needs a 'name' of 1..{MAX_NAME_LENGTH} characters, got {name!r}")
    return name


_FIELDS_BY_KIND: dict[str, set[str]] = {
    "clear": {"kind", "object"},
    "spawn": {"kind", "object", "color"},
    "join": {"kind", "name", "color"},
    "move": {"kind", "name", "action"},
    "leave": {"kind", "name"},
    "approach": {"kind", "name"},
}


def parse_event(event: dict[str, Any]) -> WorldEvent:
    """Validate a structured event dict and return it parsed, or raise ValueError saying what is wrong."""
    if not isinstance(event, dict):
        raise ValueError(f"an event must be a dict with a 'kind', got {event!r}")
    kind = event.get("kind")
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown event kind {kind!r}; expected one of: {', '.join(EVENT_KINDS)}")
    unexpected = set(event) - _FIELDS_BY_KIND.get(kind, {"kind"})
    if unexpected:
        raise ValueError(f"a {kind!r} event does not take {', '.join(sorted(unexpected))}")
    if kind == "spawn":
        object_kind = event.get("object")
        if object_kind not in OBJECT_KINDS:
            raise ValueError(f"a 'spawn' event needs an 'object' among {', '.join(OBJECT_KINDS)}, got {object_kind!r}")
        color = parse_color(event["color"], field="color") if "color" in event else None
        return WorldEvent(kind=kind, object=object_kind, color=color)
    if kind == "join":
        color = parse_color(event["color"], field="color") if "color" in event else None
        return WorldEvent(kind=kind, name=_parse_name(event), color=color)
    if kind == "move":
        action = event.get("action")
        if not isinstance(action, int) or isinstance(action, bool) or not 0 <= action <= MAX_ACTION:
            raise ValueError(f"a 'move' event needs an 'action' bitmask 0..{MAX_ACTION}, got {action!r}")
        return WorldEvent(kind=kind, name=_parse_name(event), action=action)
    if kind in ("leave", "approach"):
        return WorldEvent(kind=kind, name=_parse_name(event))
    if kind == "clear" and "object" in event:
        if event["object"] not in CLEARED_NARRATIONS:
            raise ValueError(f"a 'clear' event ends one of {', '.join(CLEARED_NARRATIONS)}, got {event['object']!r}")
        return WorldEvent(kind=kind, object=event["object"])
    return WorldEvent(kind=kind)
