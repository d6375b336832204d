"""The world engine interface the inference worker calls, and the registry of engines.

An engine opens sessions from a world spec (and, when resuming, a snapshot), steps a *batch* of sessions at
once (one action and a list of structured events per session in, one encoded frame per session out), and
snapshots a session to bytes. The engine knows nothing about the platform, WebSockets or Django; the worker
process is the only bridge (the split nanochat keeps in `nanochat/engine.py`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple


class StepRequest(NamedTuple):
    """One session's input for one tick; a plain `(session, action, events)` tuple works the same."""

    session: str
    action: int
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class Frame:
    """One encoded frame of one session, numbered by the tick that produced it."""

    session: str
    number: int
    jpeg: bytes


class WorldEngine(ABC):
    """A world engine; one instance serves many sessions and is driven from a single thread."""

    name: ClassVar[str]

    @abstractmethod
    def open_session(self, spec: dict[str, Any], snapshot: bytes | None = None) -> str:
        """Open a session from a world spec, resuming from `snapshot` when given; returns its id."""

    @abstractmethod
    def step(self, batch: list[StepRequest]) -> list[Frame]:
        """Advance every session in `batch` by one tick; frames come back in the order of `batch`."""

    @abstractmethod
    def snapshot(self, session: str) -> bytes:
        """The session's state as bytes that `open_session` accepts back."""

    @abstractmethod
    def close(self, session: str) -> None:
        """Forget a session and free what it holds."""


class RaycastEngine(WorldEngine):
    """The procedural raycaster served as an engine of its own: exact, fast, and not a neural model."""

    name = "raycaster"

    def open_session(self, spec: dict[str, Any], snapshot: bytes | None = None) -> str:
        raise NotImplementedError("the raycaster engine is being built")

    def step(self, batch: list[StepRequest]) -> list[Frame]:
        raise NotImplementedError("the raycaster engine is being built")

    def snapshot(self, session: str) -> bytes:
        raise NotImplementedError("the raycaster engine is being built")

    def close(self, session: str) -> None:
        raise NotImplementedError("the raycaster engine is being built")


_ENGINES: dict[str, type[WorldEngine]] = {RaycastEngine.name: RaycastEngine}


def available_engines() -> dict[str, type[WorldEngine]]:
    """Engines this process can serve, by name (a copy: callers cannot change the registry)."""
    return dict(_ENGINES)


def create_engine(name: str, **options: Any) -> WorldEngine:
    """Build the engine called `name` with its keyword options."""
    try:
        engine_class = _ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; available: {', '.join(sorted(_ENGINES))}") from None
    return engine_class(**options)
