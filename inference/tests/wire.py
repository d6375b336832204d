"""The session host as the platform reads it: every message it returns as the JSON object that goes on the wire,
so tests assert the protocol field for field."""

from __future__ import annotations

from typing import Any

import msgspec

from inference.engine import Frame
from inference.play.host import SessionHost


def wire(message: msgspec.Struct) -> dict[str, Any]:
    return msgspec.to_builtins(message)


class WireHost(SessionHost):
    def open(self, message: Any) -> list[dict[str, Any]]:  # type: ignore[override]
        return [wire(reply) for reply in super().open(message)]

    def input(self, session_id: str, sequence: int, given: dict[str, Any]) -> list[dict[str, Any]]:  # type: ignore[override]
        return [wire(reply) for reply in super().input(session_id, sequence, given)]

    def input_forwarded(self, session_id: str, sequence: int, given: dict[str, Any]) -> list[dict[str, Any]]:  # type: ignore[override]
        return [wire(reply) for reply in super().input_forwarded(session_id, sequence, given)]

    def early_inputs_apply(self, session_id: str) -> list[dict[str, Any]]:  # type: ignore[override]
        return [wire(reply) for reply in super().early_inputs_apply(session_id)]

    def tick(self) -> tuple[list[tuple[Frame, int]], list[dict[str, Any]]]:  # type: ignore[override]
        frames, due = super().tick()
        return frames, [wire(message) for message in due]

    def snapshot(self, session_id: str) -> dict[str, Any]:  # type: ignore[override]
        return wire(super().snapshot(session_id))
