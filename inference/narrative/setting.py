"""What the narrative engine knows of a session's world: its cast, its hooks and its rating.

The platform sends it in the session's open message (`narrative`), taken from the published version's
document, so a worker needs no database: characters as the document holds them (with the platform's id for
each, under which their memories are kept), hooks with their branches, the content rating, and the term
lists of the safety filter. Everything here is plain data and pure decisions: which clues a character may
reveal now, which hook an input, a beat, a flag or a position fires.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inference.language.base import GenerationSettings
from inference.narrative.hooks import Branch
from inference.narrative.prompting import CharacterSheet
from inference.narrative.reply_checks import world_words_of
from inference.narrative.safety import TermFilter

# MiniLM cosine between a player's words and a hook's intent that fires an "intent" hook: paraphrases of an
# intent score 0.5-0.8, talk about other things under 0.35 (the same scale as BranchConfig.threshold).
INTENT_TRIGGER_THRESHOLD = 0.5


@dataclass(frozen=True)
class Clue:
    """Something a character knows and may reveal once its condition holds."""

    name: str
    text: str
    condition: str  # "beat", "flag" or "keyword"
    value: str

    def holds(self, *, beat: str | None, flags: Sequence[str], recent_text: str) -> bool:
        if self.condition == "beat":
            return beat == self.value
        if self.condition == "flag":
            return self.value in flags
        return bool(re.search(rf"\b{re.escape(self.value.lower())}\b", recent_text.lower()))


@dataclass(frozen=True)
class CastMember:
    """A character of the world as the narrative engine plays it."""

    key: str  # the document's key ("character-0")
    id: int | None  # the platform's id, under which memories are kept; None: it remembers nothing
    sheet: CharacterSheet
    greeting: str
    clues: tuple[Clue, ...]
    settings: GenerationSettings

    @property
    def sheet_text(self) -> str:
        return " ".join([*dataclasses.astuple(self.sheet), self.greeting, *(clue.text for clue in self.clues)])

    def clues_now(self, *, beat: str | None, flags: Sequence[str], recent_text: str) -> list[Clue]:
        return [clue for clue in self.clues if clue.holds(beat=beat, flags=flags, recent_text=recent_text)]


@dataclass(frozen=True)
class HookRule:
    """A hook: what fires it, what it shows, and the branches the player's response is classified into."""

    name: str
    trigger: str  # "area", "keywords", "intent", "beat" or "flag"
    value: Mapping[str, Any]
    presentation: str
    branches: tuple[Branch, ...]
    effects: Mapping[str, Mapping[str, Any]]  # by branch name
    fallback_enabled: bool = True
    fallback_guidance: str = ""

    def fired_by_text(self, text: str, similarity_to_intent: float | None) -> bool:
        if self.trigger == "keywords":
            words = text.lower()
            return any(re.search(rf"\b{re.escape(key.lower())}\b", words) for key in self.value.get("keywords", []))
        if self.trigger == "intent":
            return similarity_to_intent is not None and similarity_to_intent >= INTENT_TRIGGER_THRESHOLD
        return False

    def fired_at(self, position: tuple[float, float]) -> bool:
        if self.trigger != "area":
            return False
        x, y = position
        return (x - float(self.value["x"])) ** 2 + (y - float(self.value["y"])) ** 2 <= float(self.value["radius"]) ** 2


@dataclass
class Setting:
    """A session's world for the narrative engine."""

    title: str
    rating: str
    world_rules: str  # what the language model must hold true; the player-facing description when none
    player_name: str
    cast: dict[str, CastMember]  # by name, as players address characters
    hooks: list[HookRule]
    terms: TermFilter
    # Each "intent" hook's intent, embedded once by the host: (H, D), rows in the order of `intent_hooks`.
    intent_hooks: list[HookRule] = field(default_factory=list)
    intent_embeddings: np.ndarray | None = None

    @classmethod
    def from_message(cls, data: Mapping[str, Any]) -> Setting:
        cast = {}
        for character in data.get("characters", []):
            member = cast_member(character)
            cast[member.sheet.name] = member
        hooks = [hook_rule(hook) for hook in data.get("hooks", [])]
        return cls(
            title=str(data.get("title", "")),
            rating=str(data.get("content_rating", "everyone")),
            world_rules=str(data.get("world_rules") or data.get("description", "")),
            player_name=str(data.get("player_name") or "traveller"),
            cast=cast,
            hooks=hooks,
            terms=TermFilter.from_dict(data.get("safety", {})),
            intent_hooks=[hook for hook in hooks if hook.trigger == "intent"],
        )

    @functools.cached_property
    def world_words(self) -> frozenset[str]:
        """Every word of the world's and its characters' own texts: what its characters may say."""
        texts = [self.title, self.world_rules, *(member.sheet_text for member in self.cast.values())]
        return world_words_of(texts)

    def hook(self, name: str | None) -> HookRule | None:
        return next((hook for hook in self.hooks if hook.name == name), None)

    def hooks_fired_by_beat(self, beat: str) -> list[HookRule]:
        return [hook for hook in self.hooks if hook.trigger == "beat" and hook.value.get("beat") == beat]

    def hooks_fired_by_flags(self, flags: Sequence[str]) -> list[HookRule]:
        return [hook for hook in self.hooks if hook.trigger == "flag" and hook.value.get("flag") in flags]


def cast_member(character: Mapping[str, Any]) -> CastMember:
    """A document character (with the platform's `id`) as the narrative engine plays it."""
    defaults = GenerationSettings()
    temperature = character.get("reply_temperature")
    max_tokens = character.get("reply_max_tokens")
    return CastMember(
        key=str(character.get("key", "")),
        id=character.get("id") if character.get("memory_scope", "player") != "none" else None,
        sheet=CharacterSheet.from_document(character),
        greeting=str(character.get("greeting", "")),
        clues=tuple(
            Clue(name=clue["name"], text=clue["text"], condition=clue["condition"], value=clue["condition_value"])
            for clue in character.get("clues", [])
        ),
        settings=GenerationSettings(
            temperature=float(temperature) if temperature is not None else defaults.temperature,
            max_new_tokens=int(max_tokens) if max_tokens else defaults.max_new_tokens,
        ),
    )


def hook_rule(hook: Mapping[str, Any]) -> HookRule:
    branches = hook.get("branches", [])
    return HookRule(
        name=hook["name"],
        trigger=hook["trigger"],
        value=hook.get("trigger_value") or {},
        presentation=str(hook.get("presentation", "")),
        branches=tuple(
            Branch(name=branch["name"], intent=branch["intent"], examples=tuple(branch.get("examples", [])))
            for branch in branches
        ),
        effects={branch["name"]: branch.get("effects") or {} for branch in branches},
        fallback_enabled=bool(hook.get("fallback_enabled", True)),
        fallback_guidance=str(hook.get("fallback_guidance", "")),
    )
