"""Typed prompts that describe a change of the world, turned into world events by a fixed word list.

This is the deterministic baseline the worker always has: "make it night", "it starts snowing", "a red
tower appears ahead" become events of the vocabulary in inference/world/EVENTS.md. A prompt it does not
recognise yields no event and goes to the narrator. The narrative engine may put a learned classifier in
front of it; this list stays as the fallback that needs no model.

Words about the weather are not always a wish for it. A question ("is it going to rain?") or a request to be
told ("tell me about the crystals") changes nothing, nor does the player acting on the world ("I walk into the
rain"): `asks_for_words` sends it to the narrator; a request put as a question ("could it be daytime?", "can
you make it rain?") still asks for the change. A negation or an aversion ("no more snow", "make the fog go
away", "I'm sick of this rain") asks for the event that undoes what it names (`UNDOING`, from the table in
inference/world/EVENTS.md: clear ends snow, rain and fog; day and night end each other); what nothing undoes
(a spawned tower, the dawn) yields no event. `negated` finds the negation and `without_negation` leaves
what it negates, for the keyword list here and for the learned classifier alike.
"""

from __future__ import annotations

import re
from typing import Any

from inference.world.events import OBJECT_KINDS

# Each kind with the words that ask for it; checked in this order, so "stop the snow" finds "stop" first.
WEATHER_AND_TIME: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("clear", ("clear", "stop", "stops", "sunny", "lift", "lifts")),
    ("night", ("night", "nighttime", "dark", "darkness", "midnight", "nightfall")),
    ("dawn", ("dawn", "sunrise", "daybreak", "morning")),
    ("day", ("day", "daytime", "daylight", "noon", "bright")),
    ("snow", ("snow", "snowing", "snows", "blizzard", "snowfall")),
    ("rain", ("rain", "raining", "rains", "storm", "downpour", "drizzle")),
    ("fog", ("fog", "foggy", "mist", "misty", "haze")),
)
SPAWN_WORDS = ("appear", "appears", "appearing", "spawn", "summon", "conjure", "raise", "rises", "grow", "grows",
               "build", "place", "put", "create", "add", "emerges", "emerge", "materialises", "materializes",
               "arrives")  # fmt: skip
OBJECT_WORDS: dict[str, str] = {kind: kind for kind in OBJECT_KINDS} | {
    "towers": "tower",
    "trees": "tree",
    "lanterns": "lantern",
    "lamp": "lantern",
    "light": "lantern",
    "crystals": "crystal",
    "gem": "crystal",
    "monster": "creature",
    "beast": "creature",
    "animal": "creature",
}
COLOR_WORDS: dict[str, tuple[int, int, int]] = {
    "red": (200, 40, 40), "green": (40, 160, 60), "blue": (50, 80, 200), "yellow": (230, 210, 60),
    "white": (235, 235, 235), "black": (25, 25, 25), "purple": (140, 60, 170), "orange": (230, 130, 40),
    "gold": (220, 180, 60), "silver": (190, 195, 200),
}  # fmt: skip


# The event that undoes each kind; a kind missing here has none.
UNDOING: dict[str, str] = {"snow": "clear", "rain": "clear", "fog": "clear", "night": "day", "day": "night"}
NEGATION = re.compile(
    r"\b(?:no more|no longer|any ?more|no|not|never|stop(?:s|ped|ping)?|put an end to|end|enough(?: of)?|without|"
    r"go(?:es)? away|away|get rid of|rid of|remove|banish|dispel|disperse|cease|halt|(?:disappear|vanish)\w*(?=\W*$)|"
    r"(?:do|does|did|is|are|was|were|wo|ca)n't|(?:do|does|did) not|dont|doesnt|isnt|wont|"
    r"(?:sick|tired|weary) of|fed up with|had enough of|hate|can't stand)\b",
    re.IGNORECASE,
)
# A question word first ("what if" and "how about" propose, they do not ask), or a verb before its subject.
ASKING = re.compile(
    r"^(?:(?:who|whom|whose|what|which|where|when|why|how)\b(?!\s+(?:about|if)\b)"
    r"|(?:is|are|am|was|were|do|does|did|has|have|had)\b"
    r"|(?:will|would|can|could|shall|should|may|might)\s+(?:it|there|the|this|that|i|we|he|she|they)\b)",
    re.IGNORECASE,
)
# Before what the player asks: an interjection or the name of whom they speak to ("Eve, tell me about…").
OPENING = re.compile(r"^\s*(?:(?:so|ok|okay|well|hey|um|uh|oh|hmm)\b[,!]?\s*|[A-Z][a-z]+,\s+)+")
TELLING = re.compile(
    r"\b(?:tell|tells|told|explain\w*|describ\w*|talk(?:s|ing)? about|speak(?:s|ing)? (?:about|of)|remind me|"
    r"i wonder|want to know|like to know)\b",
    re.IGNORECASE,
)


# A question that asks for a change rather than about one: "could it be daytime?", "can we have some snow?",
# "can you make the fog go away?". "will it snow?" and "could it get any darker?" still only ask.
REQUESTING = re.compile(
    r"^(?:please\s+)?(?:can|could|would|will|may)\s+(?:you|we|it|i|there)\s+(?:please\s+)?(?:not\s+)?"
    r"(?:make|have|get|be|turn|bring|let|become|change|stop|start|give|summon|conjure|spawn|build|put)\b"
    r"(?!.*\bany\s+\w+er\b)",
    re.IGNORECASE,
)
# The player doing something in the world ("I walk into the rain", "I light my lantern") rather than wishing
# it changed ("I want it to stop snowing", "I summon a beast", "I'm sick of this rain").
PLAYER_ACTS = re.compile(
    r"^(?:then\s+)?i\s+(?!(?:want|wanna|wish|would|'d|need|hope|demand|ask|summon|conjure|make|call|cast|bring|"
    r"raise|build|create|spawn|place|put|plant|let|pray|beg|am|'m|don't|do not|can't|cannot|hate|think|guess)\b)[a-z]+",
    re.IGNORECASE,
)
# A prompt opening with one of these asks the world itself to change ("make the sky purple", "let it thunder"),
# unless it turns the player ("turn left" is a move).
CHANGE_REQUEST = re.compile(
    r"^(?:please\s+)?(?:make|let|turn|change|bring|summon|conjure|spawn|create|build|raise|add|remove|banish)\b"
    r"(?!\s+(?:left|right|around|back)\b)",
    re.IGNORECASE,
)
WORLD_CAN = (
    "the world can turn day, dawn or night, bring snow, rain or fog and clear them, or raise a tower, a tree, a "
    "lantern, a crystal or a creature"
)


def unchanged_reason(text: str) -> str | None:
    """What to tell a player whose prompt asked for a change no world event makes, or None when it did not ask
    for one (an action or words for the narrator). Said instead of a narration, which could describe a change
    the picture never shows."""
    if asks_for_words(text):
        return None
    if negated(text) and names_world_things(without_negation(text)) and not events_from_prompt(text):
        return f"Nothing changed: what you asked to end stays, since nothing here undoes it ({WORLD_CAN})."
    if CHANGE_REQUEST.match(text.replace("\u2019", "'").strip()):
        return f"Nothing changed: that is not a change this world knows ({WORLD_CAN})."
    return None


def names_world_things(text: str) -> bool:
    """Whether the text names an object, a time of day or a weather that world events make."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    return bool(words & set(OBJECT_WORDS)) or any(words & set(triggers) for _, triggers in WEATHER_AND_TIME)


def asks_for_words(text: str) -> bool:
    """Whether the prompt is a question or asks to be told something, rather than asking for a change (an
    action of the player's, "I walk into the rain", changes nothing either)."""
    text = OPENING.sub("", text.replace("\u2019", "'").strip())
    if TELLING.search(text):
        return True
    if REQUESTING.match(text):
        return False
    return text.endswith("?") or bool(ASKING.match(text)) or bool(PLAYER_ACTS.match(text))


def negated(text: str) -> bool:
    return bool(NEGATION.search(text.replace("\u2019", "'")))


def without_negation(text: str) -> str:
    """The words a negation applies to: "make the fog go away" -> "make the fog"."""
    return " ".join(NEGATION.sub(" ", text.replace("\u2019", "'")).split())


def undoing(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events that undo `events`, each kind once; none for a kind nothing undoes."""
    kinds = dict.fromkeys(UNDOING[event["kind"]] for event in events if event["kind"] in UNDOING)
    return [{"kind": kind} for kind in kinds]


def events_from_prompt(text: str) -> list[dict[str, Any]]:
    """World events a prompt asks for (possibly none)."""
    if asks_for_words(text):
        return []
    if negated(text):
        return undoing(named_events(without_negation(text)))
    return named_events(text)


def named_events(text: str) -> list[dict[str, Any]]:
    """The events whose words the text names, negated or not."""
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
