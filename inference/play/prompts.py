"""Typed prompts that describe a change of the world, turned into world events by a fixed word list.

This is the deterministic baseline the worker always has: "make it night", "it starts snowing", "a red
tower appears ahead" become events of the vocabulary in inference/world/EVENTS.md. A prompt it does not
recognise yields no event and goes to the narrator. The narrative engine may put a learned classifier in
front of it; this list stays as the fallback that needs no model.
"""

from __future__ import annotations

import re
from typing import Any

from inference.world.events import OBJECT_KINDS

# Each kind with the words that ask for it; checked in this order, so "stop the snow" finds "stop" first.
WEATHER_AND_TIME: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("clear", ("clear", "stop", "stops", "sunny", "lift", "lifts")),
    ("night", ("night", "dark", "darkness", "midnight", "nightfall")),
    ("dawn", ("dawn", "sunrise", "daybreak", "morning")),
    ("day", ("day", "daylight", "noon", "bright")),
    ("snow", ("snow", "snowing", "snows", "blizzard", "snowfall")),
    ("rain", ("rain", "raining", "rains", "storm", "downpour", "drizzle")),
    ("fog", ("fog", "foggy", "mist", "misty", "haze")),
)
SPAWN_WORDS = ("appear", "appears", "appearing", "spawn", "summon", "conjure", "raise", "rises", "grow", "grows",
               "build", "place", "put", "create", "add")  # fmt: skip
OBJECT_WORDS: dict[str, str] = {kind: kind for kind in OBJECT_KINDS} | {
    "towers": "tower", "trees": "tree", "lanterns": "lantern", "lamp": "lantern", "light": "lantern",
    "crystals": "crystal", "gem": "crystal", "monster": "creature", "beast": "creature", "animal": "creature",
}  # fmt: skip
COLOR_WORDS: dict[str, tuple[int, int, int]] = {
    "red": (200, 40, 40), "green": (40, 160, 60), "blue": (50, 80, 200), "yellow": (230, 210, 60),
    "white": (235, 235, 235), "black": (25, 25, 25), "purple": (140, 60, 170), "orange": (230, 130, 40),
    "gold": (220, 180, 60), "silver": (190, 195, 200),
}  # fmt: skip


def events_from_prompt(text: str) -> list[dict[str, Any]]:
    """World events a prompt asks for (possibly none)."""
    words = re.findall(r"[a-z]+", text.lower())
    events: list[dict[str, Any]] = []
    objects = [OBJECT_WORDS[word] for word in words if word in OBJECT_WORDS]
    if objects and any(word in SPAWN_WORDS for word in words):
        color = next((COLOR_WORDS[word] for word in words if word in COLOR_WORDS), None)
        event: dict[str, Any] = {"kind": "spawn", "object": objects[0]}
        if color is not None:
            event["color"] = list(color)
        events.append(event)
        # "a lantern appears" is about the lantern, not about light or the time of day.
        return events
    for kind, triggers in WEATHER_AND_TIME:
        if any(word in triggers for word in words):
            events.append({"kind": kind})
            if kind == "clear":
                break
    return events
