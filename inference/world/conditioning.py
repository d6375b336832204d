"""What the neural world model is told about each frame, as arrays: the state-anchoring signal, in numpy.

The model does not have to remember the world: every frame it is handed the explicit state's view of it.
Per screen column, the geometric sketch (wall depth, face, texture coordinate, material's texture kind and
colour, the nearest billboard's depth, kind and colour); per frame, the pose's fraction of a cell and heading
(which place the floor tiles and the sun), the floor and sky colours of the world, and the held keys; the
active world events as small integers that the model embeds; and the frame's overlay of single-pixel stars
and snow or rain particles (`inference.world.renderer.overlay`), which are state, not memory. The model
turns these into image planes (`inference.world.model.geometry_planes`) and only has to learn shading,
texture detail and weather.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.world.events import TIME_OF_DAY_KINDS, WEATHER_KINDS
from inference.world.renderer import SPRITE_KINDS, geometric_sketch, overlay
from inference.world.spec import WorldSpec
from inference.world.state import CONFIG as SIMULATOR_CONFIG
from inference.world.state import Action, WorldState

TEXTURE_KINDS = 4  # brick, stone, planks, metal: the renderer's (material - 1) % 4

# Column features, in order.
COLUMN_INVERSE_DEPTH = 0  # 1 / wall depth, capped: the wall's height on screen is proportional to it
COLUMN_SIDE = 1
COLUMN_TEXTURE_U = 2
COLUMN_TEXTURE_KIND = slice(3, 3 + TEXTURE_KINDS)  # one-hot
COLUMN_WALL_COLOR = slice(7, 10)  # 0..1
COLUMN_SPRITE_INVERSE_DEPTH = 10  # 0 where no billboard
COLUMN_SPRITE_U = 11
COLUMN_SPRITE_KIND = slice(12, 12 + len(SPRITE_KINDS))  # one-hot, all zero where no billboard
COLUMN_SPRITE_COLOR = slice(18, 21)
COLUMN_FEATURES = 21

# Frame features, in order.
SCALAR_CELL_FRACTION = slice(0, 2)  # x and y within the current cell, 0..1
SCALAR_HEADING = slice(2, 4)  # cos and sin of the heading
SCALAR_FLOOR_COLOR = slice(4, 7)
SCALAR_SKY_COLOR = slice(7, 10)
SCALAR_ACTION = slice(10, 16)  # the six bits of the held keys
SCALAR_FEATURES = 16

# Event indices: time of day, weather, fog.
EVENT_SLOTS = (len(TIME_OF_DAY_KINDS), len(WEATHER_KINDS), 2)


@dataclass(frozen=True)
class ConditioningConfig:
    """Bounds of the conditioning features."""

    # The player stays 0.2 cell from walls, so real depths start near 0.2; the cap only guards the division.
    max_inverse_depth: float = 8.0


CONFIG = ConditioningConfig()


@dataclass(frozen=True)
class Conditioning:
    """One frame's conditioning."""

    columns: np.ndarray  # (W, COLUMN_FEATURES) float32
    scalars: np.ndarray  # (SCALAR_FEATURES,) float32
    events: np.ndarray  # (3,) int64: indices into TIME_OF_DAY_KINDS, WEATHER_KINDS, and fog off/on
    overlay: np.ndarray  # (H, W) uint8: 0, OVERLAY_STAR or OVERLAY_PARTICLE


def conditioning(state: WorldState, spec: WorldSpec, action: int, columns: int = 64) -> Conditioning:
    """The conditioning of the frame `state` shows, reached by holding `action`."""
    sketch = geometric_sketch(state, columns)
    features = np.zeros((columns, COLUMN_FEATURES), dtype=np.float32)
    features[:, COLUMN_INVERSE_DEPTH] = np.minimum(1 / sketch.depth, CONFIG.max_inverse_depth)
    features[:, COLUMN_SIDE] = sketch.side
    features[:, COLUMN_TEXTURE_U] = sketch.texture_u
    kind = (sketch.material.astype(np.int64) - 1) % TEXTURE_KINDS
    features[:, COLUMN_TEXTURE_KIND] = np.eye(TEXTURE_KINDS, dtype=np.float32)[kind]
    palette = np.asarray(spec.palette, dtype=np.float32) / 255  # (P, 3)
    features[:, COLUMN_WALL_COLOR] = palette[(sketch.material.astype(np.int64) - 1) % len(palette)]
    has_sprite = sketch.sprite_kind > 0
    features[has_sprite, COLUMN_SPRITE_INVERSE_DEPTH] = np.minimum(
        1 / sketch.sprite_depth[has_sprite], CONFIG.max_inverse_depth
    )
    features[:, COLUMN_SPRITE_U] = sketch.sprite_u
    sprite_one_hot = np.eye(len(SPRITE_KINDS) + 1, dtype=np.float32)[sketch.sprite_kind][:, 1:]
    features[:, COLUMN_SPRITE_KIND] = sprite_one_hot
    features[:, COLUMN_SPRITE_COLOR] = sketch.sprite_color.astype(np.float32) / 255
    scalars = np.zeros(SCALAR_FEATURES, dtype=np.float32)
    scale = SIMULATOR_CONFIG.position_scale
    scalars[SCALAR_CELL_FRACTION] = (state.pose.x % scale / scale, state.pose.y % scale / scale)
    scalars[SCALAR_HEADING] = (np.cos(state.pose.radians), np.sin(state.pose.radians))
    scalars[SCALAR_FLOOR_COLOR] = np.asarray(spec.floor, dtype=np.float32) / 255
    scalars[SCALAR_SKY_COLOR] = np.asarray(spec.sky, dtype=np.float32) / 255
    scalars[SCALAR_ACTION] = [bool(action & flag) for flag in Action]
    events = np.array(
        [TIME_OF_DAY_KINDS.index(state.time_of_day), WEATHER_KINDS.index(state.weather), int(state.fog)],
        dtype=np.int64,
    )
    return Conditioning(columns=features, scalars=scalars, events=events, overlay=overlay(state, columns, columns))
