"""Worldloom's world: spec, explicit state and simulator, events vocabulary, raycaster renderer, palettes.

Importing this package does not import torch (the worker imports it at start-up through `inference.engine`);
the neural model lives in `inference.world.model` and its trainer in `inference.world.train`.
"""

from inference.world.events import EVENT_KINDS, OBJECT_KINDS, WorldEvent, parse_event
from inference.world.palette import ReferencePalette, apply_reference_image, palette_from_image
from inference.world.renderer import Sketch, geometric_sketch, render
from inference.world.spec import WorldSpec
from inference.world.state import (
    Action,
    WorldState,
    action_from_keys,
    from_snapshot,
    initial_state,
    replay,
    step,
    to_snapshot,
)

__all__ = [
    "EVENT_KINDS",
    "OBJECT_KINDS",
    "Action",
    "ReferencePalette",
    "Sketch",
    "WorldEvent",
    "WorldSpec",
    "WorldState",
    "action_from_keys",
    "apply_reference_image",
    "from_snapshot",
    "geometric_sketch",
    "initial_state",
    "palette_from_image",
    "parse_event",
    "render",
    "replay",
    "step",
    "to_snapshot",
]
