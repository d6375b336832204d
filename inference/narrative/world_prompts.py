"""Typed prompts that ask for a change of the world, turned into world events: by the words of the vocabulary
first, and by the nearest labelled example for a wording those words do not cover.

"It starts snowing", "make it night", "a red tower appears ahead" become events of the vocabulary in
inference/world/EVENTS.md; anything else (talk to a character, a question, an action) yields no event and
goes to the narrator. A prompt is split into clauses ("make it night and let it snow"). Each clause is read
for the words a person uses for each weather, time of day and object (inference.play.prompts.named_events:
"midnight", "the sun comes up", "an oak"). Only when no clause names anything of the world is each clause
embedded (all-MiniLM-L6-v2) and given the kind of its most similar example in `EXAMPLES`, a labelled set of
phrasings per event kind plus "narration" phrasings that are not world changes (a one-nearest-neighbour rule,
which needs no training); the object of a spawn is then the kind whose description is nearest.

Embeddings know the topic of a prompt, not what it wants of it: "no more snow", "is it going to snow?" and
"shroud the market in fog" against "the fog lifts" sit close together. So the words and the grammar decide
first: a question or a request to be told something is no world change, a prohibition ("don't make it snow")
asks for nothing, a remark after the request ("no more fog, I can't see a thing") adds nothing, and a negated
clause ("make the fog go away") is read without its negation and becomes the event that undoes the one it
names (clear for fog), or none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from inference.language.embedding import Embedder
from inference.play.prompts import (
    COLOR_WORDS,
    asks_for_words,
    clauses_of,
    distinct,
    named_events,
    names_world_things,
    undoing,
)

NARRATION = "narration"
# The labelled phrasings; the evaluation (tests/data/narrative/world_prompts_eval.json) uses other wordings.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "night": ("make it night", "night falls", "turn the sky dark", "it gets dark", "let the stars come out",
              "switch to nighttime", "the sun goes down"),
    "dawn": ("make it dawn", "the sun rises", "it is early morning", "sunrise", "the first light of day breaks"),
    "day": ("make it day", "bright daylight", "it is noon", "the sun is high in the sky", "switch to daytime",
            "the sun comes out", "let the sun shine"),
    "snow": ("it starts snowing", "make it snow", "a blizzard sweeps in", "snowflakes fall",
             "cover everything in snow"),
    "rain": ("it starts raining", "make it rain", "a storm rolls in", "heavy rain pours down", "a drizzle begins"),
    "fog": ("fog rolls in", "make it foggy", "a thick mist covers everything", "haze fills the air"),
    # "stop the rain" is the negation of rain, found by the grammar, not a phrasing of its own.
    "clear": ("the weather clears", "the fog lifts", "clear skies", "the storm passes", "the clouds part"),
    "spawn": ("a tower appears ahead", "put a tree here", "summon a creature", "a lantern appears",
              "build a tower in front of me", "a glowing crystal rises from the ground", "spawn a monster"),
    NARRATION: ("hello, who are you?", "what did I find at the docks?", "I open the door", "tell me about the town",
                "I walk towards the harbour", "ask her about the ship", "thank you, goodbye", "I pick up the key",
                "where should I go next?", "I attack the guard", "I am looking for my sister"),
}  # fmt: skip
OBJECT_DESCRIPTIONS = {
    "tower": "a tall stone tower, spire or building",
    "tree": "a tree, an oak or a pine",
    "lantern": "a lantern, a lamp or a light",
    "crystal": "a glowing crystal, a gem or a shard",
    "creature": "a creature, a monster, a beast or an animal",
}


@dataclass(frozen=True)
class WorldPromptConfig:
    """How close a clause must be to an example to trust it."""

    # MiniLM cosine: rewordings of an example score 0.55-0.9; below 0.45 the keyword list decides instead.
    threshold: float = 0.45


class WorldPromptClassifier:
    """Maps typed prompts onto world events; embeds the labelled examples once."""

    def __init__(self, embedder: Embedder, config: WorldPromptConfig | None = None) -> None:
        self.embedder = embedder
        self.config = config or WorldPromptConfig()
        self.labels = [kind for kind, phrasings in EXAMPLES.items() for _ in phrasings]
        self.examples = embedder.embed(
            [phrasing for phrasings in EXAMPLES.values() for phrasing in phrasings]
        )  # (E, D)
        self.objects = embedder.embed(list(OBJECT_DESCRIPTIONS.values()))  # (O, D)

    def events(self, prompt: str) -> list[dict[str, Any]]:
        """The world events `prompt` asks for; [] when it is not a world change (it goes to the narrator)."""
        if asks_for_words(prompt):
            return []
        clauses = clauses_of(prompt)
        named = [named_events(clause.reading) for clause in clauses]
        if not any(named) and not any(names_world_things(clause.reading) for clause in clauses):
            # No clause uses the words of the vocabulary: the nearest examples judge the wording. A clause that
            # names a world thing without asking for it ("the tree over there looks ancient") asks for nothing.
            readings = [clause.reading for clause in clauses]
            vectors = self.embedder.embed(readings) if readings else np.zeros((0, 0), np.float32)  # (C, D)
            named = [self._clause_events(reading, vector) for reading, vector in zip(readings, vectors, strict=True)]
        events: list[dict[str, Any]] = []
        for clause, found in zip(clauses, named, strict=True):
            events += undoing(found) if clause.undo else found
        return distinct(events)

    def _clause_events(self, clause: str, vector: np.ndarray) -> list[dict[str, Any]]:
        similarities = self.examples @ vector  # (E,)
        best = int(similarities.argmax())
        kind = self.labels[best]
        if similarities[best] < self.config.threshold or kind == NARRATION:
            return []
        if kind != "spawn":
            return [{"kind": kind}]
        event: dict[str, Any] = {
            "kind": "spawn",
            "object": list(OBJECT_DESCRIPTIONS)[int((self.objects @ vector).argmax())],
        }
        color = next((COLOR_WORDS[word] for word in re.findall(r"[a-z]+", clause.lower()) if word in COLOR_WORDS), None)
        if color is not None:
            event["color"] = list(color)
        return [event]
