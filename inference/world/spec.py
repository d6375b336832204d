"""The world spec: what a creator decides about a world, validated, as handed to an engine by the platform.

A spec is a plain dict on the wire (JSON in the platform's database) and a frozen dataclass here.
`WorldSpec.from_dict` fills defaults for missing keys and raises ValueError with a message a creator can act
on for anything else: unknown keys, values of the wrong type, out of range, or not in the vocabulary.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from inference.world.events import (
    MAX_NAME_LENGTH,
    OBJECT_DEFAULT_COLORS,
    OBJECT_KINDS,
    TIME_OF_DAY_KINDS,
    WEATHER_KINDS,
    Color,
    parse_color,
)


@dataclass(frozen=True)
class SpecConfig:
    """Limits and defaults of world specs."""

    # Below 8 cells there is no room for both corridors and rooms; above 64 the map outgrows a compact snapshot
    # and the raycaster's worst-case march, for no gain at 64x64 pixels.
    min_size: int = 8
    max_size: int = 64
    default_size: int = 16  # a few minutes of walking to see all of it
    # Each palette colour is one wall material; beyond 8 the materials are too many to tell apart at 64x64.
    max_palette: int = 8
    # Creator objects are capped well below the simulator's MAX_OBJECTS so that events always have room.
    max_creator_objects: int = 32
    # The characters of a world stand in it; more than a handful would crowd the first room.
    max_characters: int = 8
    default_palette: tuple[Color, ...] = ((150, 75, 60), (120, 120, 130), (140, 105, 70), (90, 110, 120))
    default_sky: Color = (110, 160, 220)  # a plain daytime blue
    default_floor: Color = (90, 85, 75)  # a neutral stone that any palette sits on


CONFIG = SpecConfig()

_KEYS = ("seed", "size", "palette", "sky", "floor", "time_of_day", "weather", "fog", "objects", "characters")
# Clothes for characters whose creator chose no colour, picked by name: distinct from one another and from walls.
CHARACTER_COLORS: tuple[Color, ...] = (
    (170, 60, 50), (50, 90, 160), (60, 130, 80), (150, 110, 40), (110, 60, 140), (40, 120, 130),
)  # fmt: skip


@dataclass(frozen=True)
class SpecObject:
    """An object a creator placed in the world, in cell units (0..size on each axis)."""

    kind: str
    x: float
    y: float
    color: Color


@dataclass(frozen=True)
class SpecCharacter:
    """A character standing in the world: where the creator put them (cell units), or None for in front of the
    player where they arrive."""

    name: str
    color: Color
    x: float | None = None
    y: float | None = None


@dataclass(frozen=True)
class WorldSpec:
    """A validated world spec; build it with `WorldSpec.from_dict`."""

    seed: int = 0
    size: int = CONFIG.default_size
    palette: tuple[Color, ...] = CONFIG.default_palette
    sky: Color = CONFIG.default_sky
    floor: Color = CONFIG.default_floor
    time_of_day: str = "day"
    weather: str = "clear"
    fog: bool = False
    objects: tuple[SpecObject, ...] = ()
    characters: tuple[SpecCharacter, ...] = ()

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> WorldSpec:
        """Validate a spec dict; missing keys take their defaults, anything wrong raises ValueError."""
        if not isinstance(spec, dict):
            raise ValueError(f"a world spec must be a dict, got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(_KEYS))
        if unknown:
            raise ValueError(f"unknown world spec keys: {', '.join(unknown)}; expected some of: {', '.join(_KEYS)}")
        seed = spec.get("seed", 0)
        if not _is_int(seed) or not 0 <= seed < 2**63:
            raise ValueError(f"seed must be an integer 0..2**63-1, got {seed!r}")
        size = spec.get("size", CONFIG.default_size)
        if not _is_int(size) or not CONFIG.min_size <= size <= CONFIG.max_size:
            raise ValueError(f"size must be an integer {CONFIG.min_size}..{CONFIG.max_size}, got {size!r}")
        palette = spec.get("palette", CONFIG.default_palette)
        if not isinstance(palette, (list, tuple)) or not 1 <= len(palette) <= CONFIG.max_palette:
            raise ValueError(f"palette must be a list of 1..{CONFIG.max_palette} [r, g, b] colours, got {palette!r}")
        time_of_day = spec.get("time_of_day", "day")
        if time_of_day not in TIME_OF_DAY_KINDS:
            raise ValueError(f"time_of_day must be one of {', '.join(TIME_OF_DAY_KINDS)}, got {time_of_day!r}")
        weather = spec.get("weather", "clear")
        if weather not in WEATHER_KINDS:
            raise ValueError(f"weather must be one of {', '.join(WEATHER_KINDS)}, got {weather!r}")
        fog = spec.get("fog", False)
        if not isinstance(fog, bool):
            raise ValueError(f"fog must be true or false, got {fog!r}")
        objects = spec.get("objects", [])
        if not isinstance(objects, (list, tuple)) or len(objects) > CONFIG.max_creator_objects:
            raise ValueError(f"objects must be a list of at most {CONFIG.max_creator_objects}, got {objects!r}")
        characters = spec.get("characters", [])
        if not isinstance(characters, (list, tuple)) or len(characters) > CONFIG.max_characters:
            raise ValueError(f"characters must be a list of at most {CONFIG.max_characters}, got {characters!r}")
        return cls(
            seed=seed,
            size=size,
            palette=tuple(parse_color(color, field=f"palette[{index}]") for index, color in enumerate(palette)),
            sky=parse_color(spec.get("sky", CONFIG.default_sky), field="sky"),
            floor=parse_color(spec.get("floor", CONFIG.default_floor), field="floor"),
            time_of_day=time_of_day,
            weather=weather,
            fog=fog,
            objects=tuple(_parse_object(item, index, size) for index, item in enumerate(objects)),
            characters=tuple(_parse_character(item, index, size) for index, item in enumerate(characters)),
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec as the JSON-ready dict that `from_dict` reads back."""
        return {
            "seed": self.seed,
            "size": self.size,
            "palette": [list(color) for color in self.palette],
            "sky": list(self.sky),
            "floor": list(self.floor),
            "time_of_day": self.time_of_day,
            "weather": self.weather,
            "fog": self.fog,
            "objects": [
                {"kind": item.kind, "x": item.x, "y": item.y, "color": list(item.color)} for item in self.objects
            ],
            "characters": [
                {"name": item.name, "color": list(item.color)}
                | ({"x": item.x, "y": item.y} if item.x is not None and item.y is not None else {})
                for item in self.characters
            ],
        }


def _is_int(value: Any) -> bool:
    # bool is an int subclass; `"size": true` is a mistake, not 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _coordinates(item: dict[str, Any], field: str, size: int) -> tuple[float, float]:
    coordinates = []
    for axis in ("x", "y"):
        value = item.get(axis)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < size:
            raise ValueError(f"{field}.{axis} must be a number strictly between 0 and size ({size}), got {value!r}")
        coordinates.append(float(value))
    return coordinates[0], coordinates[1]


def _checked_keys(item: Any, field: str, keys: set[str], needs: str) -> dict[str, Any]:
    """`item` if it is a dict of `keys` only, else ValueError naming `field` (and what it `needs`)."""
    if not isinstance(item, dict):
        raise ValueError(f"{field} must be a dict with {needs}, got {item!r}")
    unknown = sorted(set(item) - keys)
    if unknown:
        raise ValueError(f"{field} has unknown keys: {', '.join(unknown)}")
    return item


def _parse_character(item: Any, index: int, size: int) -> SpecCharacter:
    field = f"characters[{index}]"
    item = _checked_keys(item, field, {"name", "x", "y", "color"}, needs="a name")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{field}.name must be 1..{MAX_NAME_LENGTH} characters, got {name!r}")
    if ("x" in item) != ("y" in item):
        raise ValueError(f"{field} needs both x and y, or neither (then the character stands before the player)")
    x, y = _coordinates(item, field, size) if "x" in item else (None, None)
    if "color" in item:
        color = parse_color(item["color"], field=f"{field}.color")
    else:
        color = CHARACTER_COLORS[zlib.crc32(name.encode()) % len(CHARACTER_COLORS)]
    return SpecCharacter(name=name, color=color, x=x, y=y)


def _parse_object(item: Any, index: int, size: int) -> SpecObject:
    field = f"objects[{index}]"
    item = _checked_keys(item, field, {"kind", "x", "y", "color"}, needs="kind, x and y")
    kind = item.get("kind")
    if kind not in OBJECT_KINDS:
        raise ValueError(f"{field}.kind must be one of {', '.join(OBJECT_KINDS)}, got {kind!r}")
    x, y = _coordinates(item, field, size)
    color = parse_color(item["color"], field=f"{field}.color") if "color" in item else OBJECT_DEFAULT_COLORS[kind]
    return SpecObject(kind=kind, x=x, y=y, color=color)
