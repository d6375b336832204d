"""Where a player is in a story: the beat, the flags set, the clues revealed; and moving along the beat graph.

The story is the published version's document (worlds.documents): beats with scenes and authored choices.
Choosing follows an authored choice (the narrative engine adds generated choices on top; when it cannot,
these are what the player gets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class StoryState:
    beat: str
    flags: list[str] = field(default_factory=list)
    revealed_clues: list[str] = field(default_factory=list)
    ended: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"beat": self.beat, "flags": self.flags, "revealed_clues": self.revealed_clues, "ended": self.ended}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoryState:
        return cls(beat=data["beat"], flags=list(data.get("flags", [])),
                   revealed_clues=list(data.get("revealed_clues", [])), ended=bool(data.get("ended")))  # fmt: skip


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

    def choices(self, state: StoryState) -> list[str]:
        return [choice["text"] for choice in self.beats[state.beat].get("choices", [])]

    def scene(self, state: StoryState) -> str:
        return self.beats[state.beat].get("scene", "")

    def choose(self, state: StoryState, index: int) -> StoryState:
        """The state after taking choice `index` of the current beat; ValueError when there is no such choice."""
        options = self.beats[state.beat].get("choices", [])
        if state.ended or not 0 <= index < len(options):
            raise ValueError(f"beat {state.beat!r} has no choice {index}")
        target = options[index]["to"]
        return StoryState(beat=target, flags=list(state.flags), revealed_clues=list(state.revealed_clues),
                          ended=not self.beats[target].get("choices"))  # fmt: skip
