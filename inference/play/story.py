"""Where a player is in a story: the beat, the flags set, the clues revealed, the choices on offer; and moving
along the beat graph.

The story is the published version's document (worlds.documents): beats with scenes, guidance and authored
choices. The choices on offer at a beat are the ones the narrative engine wrote for it, each a rewrite of one
authored choice for the scene that leads where that choice leads; an authored choice it could not rewrite
well is offered as written.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec


class StoryState(msgspec.Struct, kw_only=True):
    """The story's state in a session; the snapshot and `session.applied` carry it as it is."""

    beat: str
    flags: list[str] = []
    revealed_clues: list[str] = []
    ended: bool = False
    # The choices on offer: [{"text", "to"}]; None until the beat's choices are written.
    offered: list[dict[str, str]] | None = None

    def copy(self) -> StoryState:
        """A deep copy: a state changed later must not change what was reported of it."""
        return copy.deepcopy(self)


class StoryGraph:
    """A story's beats by name, read from a world document's story."""

    def __init__(self, story: dict[str, Any]) -> None:
        self.title = story.get("title", "")
        self.start = story["start_beat"]
        self.beats = {beat["name"]: beat for beat in story.get("beats", [])}
        if self.start not in self.beats:
            raise ValueError(f"the story's start beat {self.start!r} does not exist")

    def begin(self) -> StoryState:
        return StoryState(beat=self.start, ended=not self.beats[self.start].get("choices"))

    def authored(self, state: StoryState) -> list[dict[str, str]]:
        """The beat's authored choices, each with the scene it leads to (`leads_to`): a choice is rewritten
        for the place it leads."""
        return [
            {"text": choice["text"], "to": choice["to"], "leads_to": self.beats.get(choice["to"], {}).get("scene", "")}
            for choice in self.beats[state.beat].get("choices", [])
        ]

    def choices(self, state: StoryState) -> list[str]:
        """The texts on offer at the state's beat (none until they are written)."""
        return [choice["text"] for choice in state.offered or []]

    def scene(self, state: StoryState) -> str:
        return self.beats[state.beat].get("scene", "")

    def guidance(self, state: StoryState) -> str:
        beat = self.beats[state.beat]
        return " ".join(part for part in (beat.get("goal", ""), beat.get("choice_guidance", "")) if part).strip()

    def choose(self, state: StoryState, index: int) -> StoryState:
        """The state after taking offered choice `index`; ValueError when there is no such choice."""
        options = state.offered or []
        if state.ended or not 0 <= index < len(options):
            raise ValueError(f"beat {state.beat!r} has no choice {index}")
        return self.move(state, options[index]["to"])

    def move(self, state: StoryState, target: str) -> StoryState:
        """The state at beat `target` (a choice taken, or a hook's branch moving the story on)."""
        if target not in self.beats:
            raise ValueError(f"the story has no beat {target!r}")
        return StoryState(
            beat=target,
            flags=list(state.flags),
            revealed_clues=list(state.revealed_clues),
            ended=not self.beats[target].get("choices"),
        )
