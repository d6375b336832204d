"""The explicit world state of a session and its deterministic simulator: map, pose, collisions, events.

This is where persistence lives. A state is a frozen value: `step(state, action, events)` returns the next
one and never touches the old, so a run is a pure function of the initial state and its inputs, and replaying
a logged input sequence from a snapshot reproduces the live run exactly (the property the platform relies on
to move a session to another worker). The map is a grid maze with rooms, carved the way the classic
recursive-backtracker maze is, then opened with loops and rooms so that it is not all corridors.

Positions and angles are integers (1/1024 of a cell; 1/256 of a turn) and the map is generated from Python's
`random.Random.random`, whose sequence for a given seed is guaranteed stable across Python versions. Floats and
libm differ in their last bits between machines; integers do not, so a replay on another worker is bit-exact.
"""

from __future__ import annotations

import base64
import enum
import json
import math
import random
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from inference.controls import KEYS
from inference.world.events import AVATAR_DEFAULT_COLOR, OBJECT_DEFAULT_COLORS, Color, WorldEvent, parse_event
from inference.world.spec import WorldSpec


@dataclass(frozen=True)
class SimulatorConfig:
    """Units, speeds and bounds of the simulation."""

    position_scale: int = 1024  # units per cell: fine enough for smooth motion, exact as integers
    angle_steps: int = 256  # per full turn: a 360-degree turn is exactly `angle_steps / turn_speed` ticks
    move_speed: int = 80  # units per tick (0.08 cell): crossing a cell takes ~13 ticks, under a second at 20 fps
    turn_speed: int = 4  # angle steps per tick: a full turn in 64 ticks, about 3 seconds at 20 fps
    player_radius: int = 205  # units (0.2 cell): keeps the camera off the wall so walls never fill the screen
    # Every object costs a sprite per frame and bytes per snapshot; a spawn beyond this drops the oldest spawn.
    max_objects: int = 64
    max_avatars: int = 64  # joins beyond this are ignored: a Live world shows at most this many avatars
    spawn_max_distance: int = 3072  # units (3 cells): "ahead" means in view, not behind the next wall
    spawn_wall_clearance: int = 384  # units (0.375 cell): a spawned object stands clear of the wall behind it
    # A world's characters first stand this far ahead of the player, in view; spoken to, they walk over to
    # talking distance for at most `approach_max_ticks` (3 s at 20 fps), so a wall between them ends the walk.
    character_distance: int = 2048  # units (2 cells)
    talking_distance: int = 1280  # units (1.25 cells)
    approach_max_ticks: int = 60
    room_area_per_room: int = 100  # cells of map per carved room: a 16x16 map gets 2, the rest is maze
    loop_fraction: float = 0.1  # of inner walls knocked down, so that paths loop instead of dead-ending


CONFIG = SimulatorConfig()
SNAPSHOT_MAGIC = b"WLWS"
SNAPSHOT_VERSION = 1
# Texture kinds are brick, stone, planks and metal, so at least four materials exist even with one colour.
MIN_MATERIALS = 4

# Integer direction table: cos and sin of each angle step, scaled by position_scale. Rounding makes the table
# identical on every machine (no cosine of a multiple of 2*pi/256 lies near a rounding boundary).
DIRECTION_COS = tuple(
    round(math.cos(2 * math.pi * step / CONFIG.angle_steps) * CONFIG.position_scale)
    for step in range(CONFIG.angle_steps)
)
DIRECTION_SIN = tuple(
    round(math.sin(2 * math.pi * step / CONFIG.angle_steps) * CONFIG.position_scale)
    for step in range(CONFIG.angle_steps)
)


class Action(enum.IntFlag):
    """The keys held during one tick, as a bitmask (0 is standing still)."""

    FORWARD = 1  # W
    BACK = 2  # S
    STRAFE_LEFT = 4  # A
    STRAFE_RIGHT = 8  # D
    TURN_LEFT = 16  # arrow left
    TURN_RIGHT = 32  # arrow right


KEY_ACTIONS: dict[str, Action] = dict(
    zip(
        KEYS,
        (Action.FORWARD, Action.STRAFE_LEFT, Action.BACK, Action.STRAFE_RIGHT, Action.TURN_LEFT, Action.TURN_RIGHT),
        strict=True,
    )
)


def action_from_keys(held: Iterable[str]) -> Action:
    """The action for a set of held keys (browser `KeyboardEvent.code` names; others are ignored)."""
    action = Action(0)
    for key in held:
        action |= KEY_ACTIONS.get(key, Action(0))
    return action


@dataclass(frozen=True)
class Pose:
    """A position in 1/position_scale cell units and a heading in 1/angle_steps turns (0 faces +x, 64 faces +y)."""

    x: int
    y: int
    angle: int

    @property
    def cell_position(self) -> tuple[float, float]:
        return (self.x / CONFIG.position_scale, self.y / CONFIG.position_scale)

    @property
    def radians(self) -> float:
        return 2 * math.pi * self.angle / CONFIG.angle_steps


@dataclass(frozen=True)
class WorldObject:
    """A billboard object; `spawned` marks those placed by events, which give way first when space runs out."""

    kind: str
    x: int
    y: int
    color: Color
    spawned: bool


@dataclass(frozen=True)
class Avatar:
    """A Live participant's avatar, walking with the keys its participant holds."""

    name: str
    pose: Pose
    color: Color
    held: int


@dataclass(frozen=True)
class Character:
    """One of the world's characters, standing in it; `approaching` counts the ticks left of a walk to the player."""

    name: str
    pose: Pose
    color: Color
    approaching: int = 0


@dataclass(frozen=True)
class WorldState:
    """The whole, explicit state of a session at one tick."""

    seed: int
    size: int
    # size * size bytes, row-major (y, x): 0 is open floor, 1.. is the material of a wall.
    cells: bytes
    tick: int
    pose: Pose
    time_of_day: str
    weather: str
    fog: bool
    objects: tuple[WorldObject, ...]
    avatars: tuple[Avatar, ...]
    characters: tuple[Character, ...] = ()

    def grid(self) -> np.ndarray:
        """The map as a read-only uint8 array of shape (size, size), indexed [y, x]."""
        return np.frombuffer(self.cells, dtype=np.uint8).reshape(self.size, self.size)

    def is_wall(self, x: int, y: int) -> bool:
        """Whether the cell holding the point (x, y), in position units, is a wall (outside counts as wall)."""
        cell_x, cell_y = x // CONFIG.position_scale, y // CONFIG.position_scale
        if not (0 <= cell_x < self.size and 0 <= cell_y < self.size):
            return True
        return self.cells[cell_y * self.size + cell_x] != 0


def generate_cells(seed: int, size: int, materials: int) -> tuple[bytes, list[tuple[int, int, int, int]]]:
    """Carve the map for `seed` and `size`: returns its cells and its rooms as (x, y, width, height)."""
    rng = random.Random(seed)  # noqa: S311 (a map, not a secret: reproducibility is the point)

    def below(limit: int) -> int:
        # Only `random()` has a sequence guaranteed across Python versions; `randrange` does not.
        return int(rng.random() * limit)

    grid = [[1] * size for _ in range(size)]
    # Recursive backtracker over the odd cells; the walls between them are the even cells.
    last = size - 2 if size % 2 else size - 3
    start = (1 + 2 * below((last + 1) // 2), 1 + 2 * below((last + 1) // 2))
    grid[start[1]][start[0]] = 0
    stack = [start]
    while stack:
        x, y = stack[-1]
        neighbours = [
            (x + dx, y + dy)
            for dx, dy in ((2, 0), (-2, 0), (0, 2), (0, -2))
            if 1 <= x + dx <= last and 1 <= y + dy <= last and grid[y + dy][x + dx]
        ]
        if not neighbours:
            stack.pop()
            continue
        next_x, next_y = neighbours[below(len(neighbours))]
        grid[(y + next_y) // 2][(x + next_x) // 2] = 0
        grid[next_y][next_x] = 0
        stack.append((next_x, next_y))
    for y in range(1, size - 1):
        for x in range(1, size - 1):
            between_horizontal = not grid[y][x - 1] and not grid[y][x + 1]
            between_vertical = not grid[y - 1][x] and not grid[y + 1][x]
            if grid[y][x] and (between_horizontal or between_vertical) and rng.random() < CONFIG.loop_fraction:
                grid[y][x] = 0
    rooms = []
    for _ in range(max(1, size * size // CONFIG.room_area_per_room)):
        width, height = 3 + below(3), 3 + below(3)
        room_x, room_y = 1 + below(size - 2 - width), 1 + below(size - 2 - height)
        rooms.append((room_x, room_y, width, height))
        for y in range(room_y, room_y + height):
            for x in range(room_x, room_x + width):
                grid[y][x] = 0
    # Materials come in regions of 4x4 cells, so a stretch of wall reads as one surface, with a few odd bricks.
    regions = (size + 3) // 4
    region_material = [[1 + below(materials) for _ in range(regions)] for _ in range(regions)]
    cells = bytearray(size * size)
    for y in range(size):
        for x in range(size):
            if grid[y][x]:
                material = region_material[y // 4][x // 4]
                if rng.random() < 0.08:
                    material = 1 + below(materials)
                cells[y * size + x] = material
    return bytes(cells), rooms


def initial_state(spec: WorldSpec) -> WorldState:
    """The state at tick 0 of a world: its map, the player in the first room facing its longest view."""
    materials = max(len(spec.palette), MIN_MATERIALS)
    cells, rooms = generate_cells(spec.seed, spec.size, materials)
    scale = CONFIG.position_scale
    room_x, room_y, width, height = rooms[0]
    start_x, start_y = room_x + width // 2, room_y + height // 2
    state = WorldState(
        seed=spec.seed,
        size=spec.size,
        cells=cells,
        tick=0,
        pose=Pose(start_x * scale + scale // 2, start_y * scale + scale // 2, 0),
        time_of_day=spec.time_of_day,
        weather=spec.weather,
        fog=spec.fog,
        objects=(),
        avatars=(),
    )
    best_angle = max(
        range(0, CONFIG.angle_steps, CONFIG.angle_steps // 8),
        key=lambda angle: _free_distance(state, replace(state.pose, angle=angle), limit=spec.size * scale),
    )
    objects = []
    for item in spec.objects:
        x, y = _nearest_open_point(state, int(item.x * scale), int(item.y * scale))
        objects.append(WorldObject(kind=item.kind, x=x, y=y, color=item.color, spawned=False))
    state = replace(state, pose=replace(state.pose, angle=best_angle), objects=tuple(objects))
    return replace(state, characters=_characters_placed(state, spec))


def _characters_placed(state: WorldState, spec: WorldSpec) -> tuple[Character, ...]:
    """The spec's characters where the creator put them, or side by side ahead of the player, facing them."""
    scale = CONFIG.position_scale
    pose = state.pose
    unplaced = [item for item in spec.characters if item.x is None or item.y is None]
    characters = []
    for item in spec.characters:
        if item.x is not None and item.y is not None:
            x, y = _nearest_open_point(state, int(item.x * scale), int(item.y * scale))
        else:
            # Half a cell apart across the view, centred on the heading; on the heading itself where that is walled.
            across = int((unplaced.index(item) - (len(unplaced) - 1) / 2) * scale / 2)
            x, y = _standing_point_ahead(state, across) or _standing_point_ahead(state, 0) or (pose.x, pose.y)
        facing = _angle_towards(x, y, pose.x, pose.y)
        characters.append(Character(name=item.name, pose=Pose(x, y, facing), color=item.color))
    return tuple(characters)


def _standing_point_ahead(state: WorldState, across: int) -> tuple[int, int] | None:
    """The farthest point up to `character_distance` ahead (shifted `across` units to the right) that someone
    can stand on and walk from, with open floor all the way from the player; None if there is none."""
    pose, scale = state.pose, CONFIG.position_scale
    cos, sin = DIRECTION_COS[pose.angle], DIRECTION_SIN[pose.angle]
    found = None
    for ahead in range(scale // 2, CONFIG.character_distance + 1, scale // 8):
        x = pose.x + (cos * ahead - sin * across) // scale
        y = pose.y + (sin * ahead + cos * across) // scale
        if not _fits(state, x, y):
            break
        found = (x, y)
    return found


def _angle_towards(from_x: int, from_y: int, to_x: int, to_y: int) -> int:
    """The angle step that points most nearly from one point to another, from the integer tables alone (a float
    atan2 could round differently on another machine and a replay would diverge)."""
    delta_x, delta_y = to_x - from_x, to_y - from_y
    return max(
        range(CONFIG.angle_steps), key=lambda step: DIRECTION_COS[step] * delta_x + DIRECTION_SIN[step] * delta_y
    )


def _character_walked(state: WorldState, character: Character) -> Character:
    """A character approaching the player takes one step towards them, until at talking distance."""
    if not character.approaching:
        return character
    pose, player = character.pose, state.pose
    if (player.x - pose.x) ** 2 + (player.y - pose.y) ** 2 <= CONFIG.talking_distance**2:
        return replace(character, approaching=0)
    facing = replace(pose, angle=_angle_towards(pose.x, pose.y, player.x, player.y))
    return replace(character, pose=_move(state, facing, Action.FORWARD), approaching=character.approaching - 1)


def step(state: WorldState, action: int, events: Sequence[WorldEvent] = ()) -> WorldState:
    """The state one tick later: events apply first (in order), then everyone moves."""
    for event in events:
        state = apply_event(state, event)
    avatars = tuple(replace(avatar, pose=_move(state, avatar.pose, avatar.held)) for avatar in state.avatars)
    characters = tuple(_character_walked(state, character) for character in state.characters)
    return replace(
        state, tick=state.tick + 1, pose=_move(state, state.pose, action), avatars=avatars, characters=characters
    )


def replay(state: WorldState, inputs: Iterable[tuple[int, Sequence[dict[str, Any]]]]) -> WorldState:
    """Run logged inputs, one `(action, event dicts)` per tick, from `state`."""
    for action, events in inputs:
        state = step(state, action, [parse_event(event) for event in events])
    return state


def apply_event(state: WorldState, event: WorldEvent) -> WorldState:
    """The state with one event applied; a `move` or `leave` for an absent avatar changes nothing."""
    if event.kind in ("night", "dawn", "day"):
        return replace(state, time_of_day=event.kind)
    if event.kind in ("snow", "rain"):
        return replace(state, weather=event.kind)
    if event.kind == "fog":
        return replace(state, fog=True)
    if event.kind == "clear":
        if event.object == "fog":
            return replace(state, fog=False)
        if event.object is not None:  # the snow, or the rain, stops; any other weather stays
            return replace(state, weather="clear") if state.weather == event.object else state
        return replace(state, weather="clear", fog=False)
    if event.kind == "spawn":
        assert event.object is not None
        x, y = _point_ahead(state)
        color = event.color or OBJECT_DEFAULT_COLORS[event.object]
        objects = list(state.objects)
        if len(objects) >= CONFIG.max_objects:
            oldest_spawned = next(index for index, item in enumerate(objects) if item.spawned)
            del objects[oldest_spawned]
        objects.append(WorldObject(kind=event.object, x=x, y=y, color=color, spawned=True))
        return replace(state, objects=tuple(objects))
    if event.kind == "approach":
        characters = tuple(
            replace(character, approaching=CONFIG.approach_max_ticks) if character.name == event.name else character
            for character in state.characters
        )
        return replace(state, characters=characters)
    avatars = {avatar.name: avatar for avatar in state.avatars}
    if event.kind == "join":
        assert event.name is not None
        color = event.color or AVATAR_DEFAULT_COLOR
        if event.name in avatars:
            avatars[event.name] = replace(avatars[event.name], color=color)
        elif len(avatars) < CONFIG.max_avatars:
            x, y = _point_beside_player(state)
            avatars[event.name] = Avatar(event.name, Pose(x, y, state.pose.angle), color, held=0)
    elif event.kind == "move" and event.name in avatars:
        assert event.action is not None
        avatars[event.name] = replace(avatars[event.name], held=event.action)
    elif event.kind == "leave":
        avatars.pop(event.name or "", None)
    return replace(state, avatars=tuple(avatars.values()))


def _move(state: WorldState, pose: Pose, action: int) -> Pose:
    held = Action(action)
    turn = bool(held & Action.TURN_RIGHT) - bool(held & Action.TURN_LEFT)
    angle = (pose.angle + turn * CONFIG.turn_speed) % CONFIG.angle_steps
    forward = bool(held & Action.FORWARD) - bool(held & Action.BACK)
    strafe = bool(held & Action.STRAFE_RIGHT) - bool(held & Action.STRAFE_LEFT)
    cos, sin = DIRECTION_COS[angle], DIRECTION_SIN[angle]
    # Right of the heading is the heading turned a quarter clockwise: (-sin, cos) with y growing downwards.
    delta_x = (forward * cos - strafe * sin) * CONFIG.move_speed // CONFIG.position_scale
    delta_y = (forward * sin + strafe * cos) * CONFIG.move_speed // CONFIG.position_scale
    # Each axis moves on its own, so walking into a wall at a slant slides along it instead of sticking.
    x, y = pose.x, pose.y
    if _fits(state, x + delta_x, y):
        x += delta_x
    if _fits(state, x, y + delta_y):
        y += delta_y
    return Pose(x, y, angle)


def _fits(state: WorldState, x: int, y: int) -> bool:
    radius = CONFIG.player_radius
    return not any(
        state.is_wall(corner_x, corner_y)
        for corner_x in (x - radius, x + radius)
        for corner_y in (y - radius, y + radius)
    )


def _free_distance(state: WorldState, pose: Pose, limit: int) -> int:
    distance = 0
    while distance < limit:
        probe = distance + CONFIG.position_scale // 8
        x = pose.x + DIRECTION_COS[pose.angle] * probe // CONFIG.position_scale
        y = pose.y + DIRECTION_SIN[pose.angle] * probe // CONFIG.position_scale
        if state.is_wall(x, y):
            break
        distance = probe
    return distance


def _point_ahead(state: WorldState) -> tuple[int, int]:
    pose = state.pose
    clearance = CONFIG.spawn_wall_clearance
    distance = _free_distance(state, pose, limit=CONFIG.spawn_max_distance + clearance) - clearance
    if distance < CONFIG.position_scale // 2:
        # Facing a wall at arm's length: the object takes the player's own spot, in view once they step back.
        return pose.x, pose.y
    return (
        pose.x + DIRECTION_COS[pose.angle] * distance // CONFIG.position_scale,
        pose.y + DIRECTION_SIN[pose.angle] * distance // CONFIG.position_scale,
    )


def _point_beside_player(state: WorldState) -> tuple[int, int]:
    scale = CONFIG.position_scale
    cell_x, cell_y = state.pose.x // scale, state.pose.y // scale
    for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1)):
        x, y = (cell_x + dx) * scale + scale // 2, (cell_y + dy) * scale + scale // 2
        if _fits(state, x, y):
            return x, y
    return state.pose.x, state.pose.y


def _nearest_open_point(state: WorldState, x: int, y: int) -> tuple[int, int]:
    """`(x, y)` if it is on open floor, else the centre of the nearest open cell (a creator cannot see walls)."""
    if not state.is_wall(x, y):
        return x, y
    scale = CONFIG.position_scale
    grid = state.grid()
    open_y, open_x = np.nonzero(grid == 0)
    nearest = int(np.argmin((open_x * scale + scale // 2 - x) ** 2 + (open_y * scale + scale // 2 - y) ** 2))
    return int(open_x[nearest]) * scale + scale // 2, int(open_y[nearest]) * scale + scale // 2


def to_snapshot(state: WorldState) -> bytes:
    """The state as compact bytes: a magic, a version byte, then zlib-compressed JSON."""
    document = asdict(state)
    document["cells"] = base64.b64encode(state.cells).decode("ascii")
    payload = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
    return SNAPSHOT_MAGIC + bytes([SNAPSHOT_VERSION]) + zlib.compress(payload, level=9)


def from_snapshot(snapshot: bytes) -> WorldState:
    """The state a snapshot holds, exactly; ValueError for bytes that are not a snapshot this code reads."""
    if len(snapshot) <= len(SNAPSHOT_MAGIC) or snapshot[: len(SNAPSHOT_MAGIC)] != SNAPSHOT_MAGIC:
        raise ValueError("not a world state snapshot")
    version = snapshot[len(SNAPSHOT_MAGIC)]
    if version != SNAPSHOT_VERSION:
        raise ValueError(
            f"world state snapshot version {version} is not supported (this code reads {SNAPSHOT_VERSION})"
        )
    try:
        document = json.loads(zlib.decompress(snapshot[len(SNAPSHOT_MAGIC) + 1 :]))
        return WorldState(
            seed=document["seed"],
            size=document["size"],
            cells=base64.b64decode(document["cells"]),
            tick=document["tick"],
            pose=Pose(**document["pose"]),
            time_of_day=document["time_of_day"],
            weather=document["weather"],
            fog=document["fog"],
            objects=tuple(WorldObject(**{**item, "color": tuple(item["color"])}) for item in document["objects"]),
            avatars=tuple(
                Avatar(
                    name=avatar["name"],
                    pose=Pose(**avatar["pose"]),
                    color=tuple(avatar["color"]),
                    held=avatar["held"],
                )
                for avatar in document["avatars"]
            ),
            # Snapshots taken before worlds held characters have none.
            characters=tuple(
                Character(
                    name=character["name"],
                    pose=Pose(**character["pose"]),
                    color=tuple(character["color"]),
                    approaching=character["approaching"],
                )
                for character in document.get("characters", [])
            ),
        )
    except (zlib.error, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"corrupt world state snapshot: {error}") from error
