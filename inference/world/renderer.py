"""A first-person raycaster in numpy: the procedural renderer that is the world model's teacher and ground truth.

It follows the classic grid raycaster (Wolfenstein 3D; Lode Vandevenne's "Raycasting" tutorial: DDA per
screen column, perpendicular wall distance, floor casting, billboard sprites against a wall z-buffer), with
every column and every pixel computed at once as arrays instead of in Python loops. On top: procedural wall
textures per material, a sky with a sun, moon and stars fixed in world directions (so turning moves them),
distance shading, time of day, fog, and snow and rain particles that are a pure function of the seed and tick.

The same function renders 64x64 for the model and any larger size for previews and thumbnails;
`geometric_sketch` exposes the per-column depth and material that the neural model is conditioned on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from inference.world.spec import WorldSpec
from inference.world.state import CONFIG as SIMULATOR_CONFIG
from inference.world.state import Avatar, Character, WorldState


@dataclass(frozen=True)
class RenderConfig:
    """Camera, light and weather constants of the renderer."""

    field_of_view_degrees: float = 66.0  # the classic raycaster's camera plane of 0.66: wide without fisheye
    eye_height: float = 0.5  # in wall heights: the horizon cuts walls in half, as in Wolfenstein 3D
    distance_falloff: float = 0.12  # light = 1 / (1 + falloff * depth): a wall 8 cells away is half as bright
    side_shade: float = 0.78  # walls facing north/south are darker, so that corners read at 64x64
    fog_density: float = 0.28  # per cell: half the colour is fog at 2.5 cells, nearly all at 10
    snowflakes: int = 140  # enough to read as snow at 64x64, few enough not to hide the world at 256x256
    raindrops: int = 110
    star_density: float = 0.025  # fraction of 1-degree sky patches holding a star
    sun_azimuth: float = 0.8  # radians, fixed in the world: seeing the sun tells which way one faces
    moon_azimuth: float = 2.6
    disc_radius: float = 0.07  # radians (4 degrees): a few pixels at 64x64


CONFIG = RenderConfig()


@dataclass(frozen=True)
class Lighting:
    """How a time of day lights the scene."""

    light: float
    tint: tuple[float, float, float]
    sky_top: tuple[int, int, int] | None  # None: derived from the world's own sky colour
    sky_horizon: tuple[int, int, int] | None
    fog: tuple[int, int, int]


LIGHTING = {
    "day": Lighting(1.0, (1.0, 1.0, 1.0), None, None, (180, 185, 190)),
    "dawn": Lighting(0.72, (1.0, 0.84, 0.72), (70, 62, 125), (250, 150, 95), (205, 170, 160)),
    "night": Lighting(0.32, (0.62, 0.72, 1.0), (4, 6, 18), (22, 28, 58), (38, 42, 55)),
}

# Texture kinds, by (material - 1) % 4: brick, stone, planks, metal. Each is a grid of tiles with seams.
TILE_COLUMNS = np.array([2.0, 3.0, 5.0, 2.0], dtype=np.float32)
TILE_ROWS = np.array([4.0, 3.0, 1.0, 2.0], dtype=np.float32)
TILE_STAGGER = np.array([0.5, 0.37, 0.0, 0.0], dtype=np.float32)  # brick courses are offset by half a brick
SEAM_WIDTH = np.array([0.035, 0.03, 0.016, 0.025], dtype=np.float32)  # in wall heights
SEAM_SHADE = np.array([0.55, 0.62, 0.5, 0.72], dtype=np.float32)
TILE_NOISE = np.array([0.12, 0.22, 0.1, 0.05], dtype=np.float32)  # tile-to-tile brightness variation
GRAIN = np.array([0.0, 0.0, 0.09, 0.03], dtype=np.float32)  # streaks along each tile (wood grain, brushed metal)


SPRITE_KINDS = ("tower", "tree", "lantern", "crystal", "creature", "avatar")


@dataclass(frozen=True)
class Sketch:
    """The geometry one pose sees, per screen column: what the neural model is conditioned on."""

    depth: np.ndarray  # (W,) float32: perpendicular distance to the wall, in cells
    material: np.ndarray  # (W,) uint8: the wall's material id (1..)
    side: np.ndarray  # (W,) uint8: 0 for a wall facing east/west, 1 for north/south
    texture_u: np.ndarray  # (W,) float32: where along the wall face the column lands, 0..1
    # The nearest billboard in front of the wall in each column (its bounding box, not its exact shape).
    sprite_kind: np.ndarray  # (W,) uint8: 0 for none, else 1 + its index in SPRITE_KINDS
    sprite_depth: np.ndarray  # (W,) float32: its distance along the heading, in cells; 0 for none
    sprite_u: np.ndarray  # (W,) float32: where across the billboard the column lands, 0..1
    sprite_color: np.ndarray  # (W, 3) uint8


@dataclass(frozen=True)
class _Rays:
    camera_x: np.ndarray  # (W,) -1 at the left edge of the screen, 1 at the right
    direction_x: np.ndarray  # (W,)
    direction_y: np.ndarray  # (W,)
    depth: np.ndarray  # (W,) float32 perpendicular wall distance
    material: np.ndarray  # (W,) uint8
    side: np.ndarray  # (W,) uint8
    texture_u: np.ndarray  # (W,) float32
    cell_x: np.ndarray  # (W,) int: the wall cell each column hit
    cell_y: np.ndarray  # (W,)


@dataclass(frozen=True)
class _Billboards:
    """The billboards in front of the camera, far to near, as arrays with one entry per billboard."""

    depth: np.ndarray  # (N,) float64: along the heading, in cells
    kind: np.ndarray  # (N,) int64: index in SPRITE_KINDS
    color: np.ndarray  # (N, 3) int64
    left: np.ndarray  # (N,) float64: screen column of its left edge (fractional)
    pixel_width: np.ndarray  # (N,) float64


def _hash_uniform(*keys: np.ndarray | int) -> np.ndarray:
    """Uniform floats in [0, 1) from integer arrays: integer arithmetic only, so equal on every machine."""
    value = np.full(np.broadcast_shapes(*(np.shape(key) for key in keys)), 2166136261, dtype=np.uint32)
    for key in keys:
        value = (value ^ np.asarray(key).astype(np.uint32)) * np.uint32(16777619)
    # A murmur3-style finaliser: FNV alone leaves the low bits poorly mixed.
    value ^= value >> np.uint32(16)
    value *= np.uint32(0x85EBCA6B)
    value ^= value >> np.uint32(13)
    value *= np.uint32(0xC2B2AE35)
    value ^= value >> np.uint32(16)
    return (value >> np.uint32(8)).astype(np.float32) / np.float32(1 << 24)


def _cast(state: WorldState, width: int) -> _Rays:
    """March one ray per column through the grid (DDA), all columns in lockstep."""
    x, y = state.pose.cell_position
    angle = state.pose.radians
    plane_length = math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
    camera_x = (2 * (np.arange(width, dtype=np.float64) + 0.5) / width - 1).astype(np.float64)  # (W,)
    # The camera plane points to the right of the heading: (-sin, cos) with y growing downwards.
    direction_x = math.cos(angle) - math.sin(angle) * plane_length * camera_x  # (W,)
    direction_y = math.sin(angle) + math.cos(angle) * plane_length * camera_x  # (W,)
    with np.errstate(divide="ignore"):
        delta_x = np.abs(1 / direction_x)  # (W,) distance along the ray between x grid lines; inf if parallel
        delta_y = np.abs(1 / direction_y)
    cell_x = np.full(width, int(x), dtype=np.int64)
    cell_y = np.full(width, int(y), dtype=np.int64)
    step_x = np.where(direction_x < 0, -1, 1)
    step_y = np.where(direction_y < 0, -1, 1)
    side_x = np.where(direction_x < 0, (x - cell_x) * delta_x, (cell_x + 1 - x) * delta_x)  # (W,)
    side_y = np.where(direction_y < 0, (y - cell_y) * delta_y, (cell_y + 1 - y) * delta_y)
    side = np.zeros(width, dtype=np.uint8)
    grid = state.grid()
    active = np.ones(width, dtype=bool)
    # The map's border is all wall, so every ray stops within 2 * size steps.
    for _ in range(2 * state.size + 2):
        step_along_x = active & (side_x < side_y)
        step_along_y = active & ~step_along_x
        side_x = np.where(step_along_x, side_x + delta_x, side_x)
        cell_x = np.where(step_along_x, cell_x + step_x, cell_x)
        side_y = np.where(step_along_y, side_y + delta_y, side_y)
        cell_y = np.where(step_along_y, cell_y + step_y, cell_y)
        side = np.where(step_along_x, 0, np.where(step_along_y, 1, side)).astype(np.uint8)
        active &= grid[cell_y, cell_x] == 0
        if not active.any():
            break
    depth = np.where(side == 0, side_x - delta_x, side_y - delta_y)  # (W,) perpendicular, so no fisheye
    depth = np.maximum(depth, 1e-3)
    hit = np.where(side == 0, y + depth * direction_y, x + depth * direction_x)
    texture_u = hit - np.floor(hit)
    # Mirror the faces seen from the other side, so a texture reads left to right on every face.
    texture_u = np.where((side == 0) & (direction_x > 0) | (side == 1) & (direction_y < 0), 1 - texture_u, texture_u)
    return _Rays(
        camera_x=camera_x,
        direction_x=direction_x,
        direction_y=direction_y,
        depth=depth.astype(np.float32),
        material=grid[cell_y, cell_x].astype(np.uint8),
        side=side,
        texture_u=texture_u.astype(np.float32),
        cell_x=cell_x,
        cell_y=cell_y,
    )


def _billboards(state: WorldState, width: int, focal: float) -> _Billboards:
    """Objects, avatars and characters in front of the camera, projected onto `width` columns, far to near.

    A character is drawn as a person, like a Live participant's avatar: the world model learned that shape."""
    x, y = state.pose.cell_position
    angle = state.pose.radians
    plane_length = math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
    scale = SIMULATOR_CONFIG.position_scale
    people: tuple[Avatar | Character, ...] = (*state.avatars, *state.characters)
    kind = np.array([SPRITE_KINDS.index(item.kind) for item in state.objects] + [AVATAR] * len(people), dtype=np.int64)
    position = np.array(
        [(item.x, item.y) for item in state.objects] + [(person.pose.x, person.pose.y) for person in people],
        dtype=np.int64,
    ).reshape(-1, 2)
    color = np.array([item.color for item in (*state.objects, *people)], dtype=np.int64).reshape(-1, 3)
    relative_x, relative_y = position[:, 0] / scale - x, position[:, 1] / scale - y  # (N,)
    depth = relative_x * math.cos(angle) + relative_y * math.sin(angle)  # (N,) along the heading
    across = (-relative_x * math.sin(angle) + relative_y * math.cos(angle)) / plane_length  # (N,) camera-x units
    # A stable sort keeps billboards at equal depth in the order above, the order they were always drawn in.
    order = np.argsort(-depth, kind="stable")
    order = order[depth[order] > 0.2]
    depth, across = depth[order], across[order]
    pixel_width = focal * SPRITE_WIDTHS[kind[order]] / depth
    center = width / 2 * (1 + across / depth)
    return _Billboards(depth, kind[order], color[order], center - pixel_width / 2, pixel_width)


def geometric_sketch(state: WorldState, columns: int = 64) -> Sketch:
    """Per-column geometry of the walls and billboards the current pose sees."""
    rays = _cast(state, columns)
    focal = columns / 2 / math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
    sprite_kind = np.zeros(columns, dtype=np.uint8)
    sprite_depth = np.zeros(columns, dtype=np.float32)
    sprite_u = np.zeros(columns, dtype=np.float32)
    sprite_color = np.zeros((columns, 3), dtype=np.uint8)
    billboards = _billboards(state, columns, focal)
    if len(billboards.depth):
        centers = np.arange(columns) + 0.5  # (W,)
        u = (centers[None, :] - billboards.left[:, None]) / billboards.pixel_width[:, None]  # (N, W)
        covered = (u >= 0) & (u < 1) & (rays.depth[None, :] > billboards.depth[:, None].astype(np.float32))
        # Far to near: the nearest billboard covering a column is the last one that does.
        nearest = len(covered) - 1 - np.argmax(covered[::-1], axis=0)  # (W,)
        seen = covered.any(axis=0)
        columns_seen, nearest = np.flatnonzero(seen), nearest[seen]
        sprite_kind[seen] = 1 + billboards.kind[nearest]
        sprite_depth[seen] = billboards.depth[nearest]
        sprite_u[seen] = u[nearest, columns_seen]
        sprite_color[seen] = billboards.color[nearest]
    return Sketch(
        depth=rays.depth,
        material=rays.material,
        side=rays.side,
        texture_u=rays.texture_u,
        sprite_kind=sprite_kind,
        sprite_depth=sprite_depth,
        sprite_u=sprite_u,
        sprite_color=sprite_color,
    )


def _wall_texture(rays: _Rays, v: np.ndarray) -> np.ndarray:
    """(H, W) brightness of each wall pixel from its texture; `v` is (H, W), 0 at the wall's top, 1 at its foot."""
    kind = (rays.material.astype(np.int64) - 1) % 4  # (W,)
    columns, rows = TILE_COLUMNS[kind], TILE_ROWS[kind]  # (W,)
    course = np.floor(v * rows)  # (H, W) which row of tiles
    across = rays.texture_u * columns + TILE_STAGGER[kind] * course  # (H, W)
    tile = np.floor(across)
    seam = ((across - tile) < SEAM_WIDTH[kind] * columns) | ((v * rows - course) < SEAM_WIDTH[kind] * rows)
    noise = _hash_uniform(course.astype(np.int64), tile.astype(np.int64), rays.cell_x, rays.cell_y)
    brightness = 1 + TILE_NOISE[kind] * (2 * noise - 1)
    brightness += GRAIN[kind] * np.sin(v * 70 + noise * 6.28)
    return np.where(seam, SEAM_SHADE[kind], brightness).astype(np.float32)


def _sky(
    state: WorldState,
    spec: WorldSpec,
    lighting: Lighting,
    rays: _Rays,
    rows: np.ndarray,
    focal: float,
    height: int,
) -> np.ndarray:
    """(R, W, 3) sky colour on `rows` (R, 1): a gradient, and the sun, moon and stars at fixed directions."""
    width = rays.camera_x.shape[0]
    sky = np.asarray(spec.sky, dtype=np.float32)
    top = np.asarray(lighting.sky_top, dtype=np.float32) if lighting.sky_top else sky * 0.75
    horizon = np.asarray(lighting.sky_horizon, dtype=np.float32) if lighting.sky_horizon else sky * 0.5 + 127
    elevation = np.arctan((height / 2 - rows - 0.5) / focal)  # (R, 1) radians above the horizon
    azimuth = state.pose.radians + np.arctan(rays.camera_x * math.tan(math.radians(CONFIG.field_of_view_degrees) / 2))
    azimuth = azimuth[None, :]  # (1, W)
    blend = np.clip(elevation / 0.6, 0, 1)[..., None]  # (R, 1, 1)
    image = np.broadcast_to(horizon * (1 - blend) + top * blend, (rows.shape[0], width, 3)).copy()
    if state.weather == "rain":
        image = image * 0.45 + np.float32(115) * 0.55
    elif state.weather == "snow":
        image = image * 0.5 + np.float32(205) * 0.5
    if state.time_of_day == "night" and state.weather == "clear":
        image[_stars(state, azimuth, elevation)] = (225, 225, 210)
    disc_azimuth, disc_elevation, disc_color = {
        "day": (CONFIG.sun_azimuth, 0.45, (255, 250, 215)),
        "dawn": (CONFIG.sun_azimuth, 0.06, (255, 190, 110)),
        "night": (CONFIG.moon_azimuth, 0.5, (225, 228, 240)),
    }[state.time_of_day]
    if state.weather == "clear":
        offset = (azimuth - disc_azimuth + math.pi) % (2 * math.pi) - math.pi  # (1, W) wrapped to -pi..pi
        distance = np.sqrt(offset**2 + (elevation - disc_elevation) ** 2)  # (R, W)
        glow = np.clip(1.6 - distance / CONFIG.disc_radius, 0, 1)[..., None] * 0.6
        image = image * (1 - glow) + np.asarray(disc_color, dtype=np.float32) * glow
        image[distance < CONFIG.disc_radius] = disc_color
    return image


def _stars(state: WorldState, azimuth: np.ndarray, elevation: np.ndarray) -> np.ndarray:
    """Boolean mask of the stars at these (1, W) azimuths and (R, 1) elevations: fixed in the world by the seed."""
    degree = math.pi / 180
    star = _hash_uniform(
        np.floor(azimuth / degree).astype(np.int64) % 360,
        np.floor(elevation / degree).astype(np.int64),
        state.seed,
    )
    return (star < CONFIG.star_density) & (elevation > 0.03)


def _floor(
    state: WorldState, spec: WorldSpec, rays: _Rays, rows: np.ndarray, focal: float, height: int
) -> tuple[np.ndarray, np.ndarray]:
    """(R, W, 3) floor colour and (R, W) distance on `rows` (R, 1) below the horizon; tiled so motion shows."""
    x, y = state.pose.cell_position
    below = np.maximum(rows + 0.5 - height / 2, 0.5)  # (R, 1) pixels below the horizon
    distance = CONFIG.eye_height * focal / below  # (R, 1) forward distance of the floor seen on that row
    floor_x = x + distance * rays.direction_x[None, :]  # (R, W)
    floor_y = y + distance * rays.direction_y[None, :]
    tile_x, tile_y = np.floor(floor_x), np.floor(floor_y)
    grout = ((floor_x - tile_x) < 0.05) | ((floor_y - tile_y) < 0.05)
    variation = 0.9 + 0.1 * _hash_uniform(tile_x.astype(np.int64), tile_y.astype(np.int64), 7)
    shade = np.where(grout, 0.72, variation)[..., None]
    base = np.asarray(spec.floor, dtype=np.float32)
    if state.weather == "snow":
        base = base * 0.25 + np.float32(235) * 0.75
    return base * shade, np.broadcast_to(distance, floor_x.shape)


def _light(lighting: Lighting, depth: np.ndarray | np.floating, weather: str) -> np.ndarray:
    """(..., 3) light reaching the eye from something `depth` cells away."""
    light = lighting.light * (0.8 if weather == "rain" else 1.0)
    falloff = np.asarray(light / (1 + CONFIG.distance_falloff * depth))
    return falloff[..., None] * np.asarray(lighting.tint, dtype=np.float32)


def _fog(image: np.ndarray, depth: np.ndarray | np.floating, lighting: Lighting) -> np.ndarray:
    amount = (1 - np.exp(-CONFIG.fog_density * depth))[..., None]
    return image * (1 - amount) + np.asarray(lighting.fog, dtype=np.float32) * amount


@dataclass(frozen=True)
class Shape:
    """A billboard's picture over local coordinates u, v: 0..1 across and down its box, (P,) arrays.

    `covers` gives the (P,) mask of where it is; `paint` gives, from its (P, 3) colour, the (P, 3) colour of each
    point and a (P,) mask of the parts that glow (unlit by the scene). Painting is asked only of covered points,
    and only of those in front, so it is kept apart from the mask that decides which those are.
    """

    covers: Callable[[np.ndarray, np.ndarray], np.ndarray]
    paint: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _tower_covers(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    body = (np.abs(u - 0.5) < 0.4) & (v > 0.12)
    battlements = (v <= 0.12) & (np.floor(u * 5) % 2 == 0)
    return body | battlements


def _tower_paint(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    window = (np.abs(u - 0.5) < 0.06) & (v > 0.3) & (v < 0.42)
    shade = np.where(window, 0.25, 0.8 + 0.3 * u)[..., None]
    return color * shade, np.zeros_like(u, dtype=bool)


def _tree_trunk(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (np.abs(u - 0.5) < 0.08) & (v > 0.72)


def _tree_covers(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    crown = (v <= 0.78) & (np.abs(u - 0.5) < 0.48 * v / 0.78)
    return _tree_trunk(u, v) | crown


def _tree_paint(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    shade = (0.8 + 0.35 * (1 - u))[..., None]
    colors = np.where(_tree_trunk(u, v)[..., None], np.asarray((95, 65, 40), dtype=np.float32), color * shade)
    return colors, np.zeros_like(u, dtype=bool)


def _lantern_post(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (np.abs(u - 0.5) < 0.1) & (v > 0.32)


def _lantern_lamp(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (np.abs(u - 0.5) < 0.4) & (v > 0.05) & (v <= 0.32)


def _lantern_paint(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    colors = np.where(_lantern_post(u, v)[..., None], np.asarray((45, 45, 50), dtype=np.float32), color)
    return colors, _lantern_lamp(u, v)


def _crystal_covers(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.abs(u - 0.5) * 2 + np.abs(v - 0.5) * 2 < 1


def _crystal_paint(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    shade = np.where(u < 0.5, 1.1, 0.75)[..., None]
    return color * shade, _crystal_covers(u, v) & (np.abs(u - 0.5) < 0.08)


def _creature_eyes(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (((u - 0.37) ** 2 + (v - 0.45) ** 2) < 0.005) | (((u - 0.63) ** 2 + (v - 0.45) ** 2) < 0.005)


def _creature_covers(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return ((u - 0.5) / 0.45) ** 2 + ((v - 0.6) / 0.38) ** 2 < 1


def _creature_paint(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    eyes = _creature_eyes(u, v)
    shaded = color * (1.1 - 0.4 * v)[..., None]
    return np.where(eyes[..., None], np.asarray((255, 240, 120), dtype=np.float32), shaded), eyes


def _avatar_head(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return ((u - 0.5) ** 2 + (v - 0.14) ** 2) < 0.017


def _avatar_legs(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (v > 0.7) & (np.abs(u - 0.5) > 0.04) & (np.abs(u - 0.5) < 0.22)


def _avatar_covers(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    body = (np.abs(u - 0.5) < 0.32) & (v > 0.27) & (v <= 0.7)
    return _avatar_head(u, v) | body | _avatar_legs(u, v)


def _avatar_paint(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    colors = np.where(
        _avatar_head(u, v)[..., None],
        np.asarray((230, 190, 160), dtype=np.float32),
        np.where(_avatar_legs(u, v)[..., None], np.asarray((50, 50, 70), dtype=np.float32), color),
    )
    return colors, np.zeros_like(u, dtype=bool)


# kind: (shape, width, height) with sizes in wall heights.
SPRITES: dict[str, tuple[Shape, float, float]] = {
    "tower": (Shape(_tower_covers, _tower_paint), 0.7, 1.7),
    "tree": (Shape(_tree_covers, _tree_paint), 0.8, 1.15),
    "lantern": (Shape(lambda u, v: _lantern_post(u, v) | _lantern_lamp(u, v), _lantern_paint), 0.22, 0.7),
    "crystal": (Shape(_crystal_covers, _crystal_paint), 0.4, 0.6),
    "creature": (Shape(_creature_covers, _creature_paint), 0.5, 0.45),
    "avatar": (Shape(_avatar_covers, _avatar_paint), 0.38, 0.85),
}


SPRITE_WIDTHS = np.array([SPRITES[kind][1] for kind in SPRITE_KINDS])
SPRITE_HEIGHTS = np.array([SPRITES[kind][2] for kind in SPRITE_KINDS])
AVATAR = SPRITE_KINDS.index("avatar")


def _index_in_run(lengths: np.ndarray) -> np.ndarray:
    """0, 1, .. lengths[0] - 1, 0, 1, .. lengths[1] - 1, ..: each element's place in its run."""
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _draw_sprites(image: np.ndarray, state: WorldState, lighting: Lighting, rays: _Rays, focal: float) -> None:
    """All billboards in one pass; draws into `image` (H, W, 3).

    Every pixel of every billboard's box is a candidate; each shape's mask is evaluated once, on all the candidates
    of its kind; a pixel shows the nearest billboard covering it in front of the wall, which is what painting far to
    near gives; only the pixels shown are painted and lit.
    """
    height, width = image.shape[:2]
    billboards = _billboards(state, width, focal)
    depth, left, pixel_width = billboards.depth, billboards.left, billboards.pixel_width  # (N,)
    pixel_height = focal * SPRITE_HEIGHTS[billboards.kind] / depth
    bottom = height / 2 + focal * CONFIG.eye_height / depth
    top = bottom - pixel_height
    column_start = np.maximum(np.floor(left), 0).astype(np.int64)
    box_width = np.maximum(np.minimum(np.ceil(left + pixel_width), width).astype(np.int64) - column_start, 0)
    row_start = np.maximum(np.floor(top), 0).astype(np.int64)
    box_height = np.maximum(np.minimum(np.ceil(bottom), height).astype(np.int64) - row_start, 0)
    # Candidates run box by box, row by row, and grouped by kind, so that each shape reads one contiguous slice;
    # the index of a billboard (far to near) says which one is in front. What depends on the row alone or on the
    # column alone is computed once per box row or box column and repeated.
    by_kind = np.argsort(billboards.kind, kind="stable")
    box_rows = np.where(box_width > 0, box_height, 0)[by_kind]  # (N,) 0 for a billboard off the screen
    row_owner = np.repeat(by_kind, box_rows)  # (R,) the billboard of each box row
    row = row_start[row_owner] + _index_in_run(box_rows)  # (R,)
    row_v = (row + 0.5 - top[row_owner]) / pixel_height[row_owner]
    box_columns = box_width[by_kind]  # (N,)
    column_owner = np.repeat(by_kind, box_columns)  # (C,) the billboard of each box column
    column = column_start[column_owner] + _index_in_run(box_columns)
    column_u = (column + 0.5 - left[column_owner]) / pixel_width[column_owner]
    row_width = box_width[row_owner]  # (R,)
    owner = np.repeat(row_owner, row_width)  # (P,) the billboard of each candidate pixel
    rows, v = np.repeat(row, row_width), np.repeat(row_v, row_width)  # (P,)
    first_column = np.repeat(np.cumsum(box_columns) - box_columns, box_rows)  # (R,) in `column`
    at_column = np.repeat(first_column, row_width) + _index_in_run(row_width)  # (P,)
    columns, u = column[at_column], column_u[at_column]
    # The wall depth is float32, and so is the comparison: a billboard exactly at a wall's depth stays behind it.
    billboard_depth = depth.astype(np.float32)
    column_open = (column_u >= 0) & (column_u < 1) & (rays.depth[column] > billboard_depth[column_owner])  # (C,)
    covered = column_open[at_column] & np.repeat((row_v >= 0) & (row_v < 1), row_width)  # (P,)
    per_kind = np.bincount(billboards.kind[by_kind], weights=box_rows * box_columns, minlength=len(SPRITE_KINDS))
    per_kind = per_kind.astype(np.int64)  # candidates of each kind
    kind_end = np.cumsum(per_kind)
    kinds = [
        (SPRITES[name][0], end - size, end)
        for name, size, end in zip(SPRITE_KINDS, per_kind, kind_end, strict=True)
        if size
    ]
    for shape, start, end in kinds:
        covered[start:end] &= shape.covers(u[start:end], v[start:end])
    drawn = np.flatnonzero(covered)
    key = (rows[drawn] * width + columns[drawn]) * len(depth) + owner[drawn]  # by pixel, then far to near
    order = np.argsort(key)
    pixel = key[order] // len(depth)
    nearest = np.ones(len(order), dtype=bool)  # the last candidate of each pixel
    nearest[:-1] = pixel[1:] != pixel[:-1]
    shown = np.zeros(len(owner), dtype=bool)
    shown[drawn[order[nearest]]] = True
    light = _light(lighting, billboard_depth, state.weather)  # (N, 3)
    for shape, start, end in kinds:
        chosen = start + np.flatnonzero(shown[start:end])
        of = owner[chosen]
        colors, emissive = shape.paint(u[chosen], v[chosen], billboards.color[of].astype(np.float32))
        lit = np.where(emissive[..., None], colors, colors * light[of])
        if state.fog:
            lit = _fog(lit, billboard_depth[of], lighting)
        image[rows[chosen], columns[chosen]] = lit


def _draw_weather(image: np.ndarray, state: WorldState) -> None:
    """Snowflakes or rain streaks, placed by the seed and moved by the tick alone; draws into `image`."""
    rows, columns, color = _particles(state, *image.shape[:2])
    image[rows, columns] = color


def _particles(state: WorldState, height: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel rows and columns of the snowflakes or rain streaks of this tick, and their colour."""
    size = max(1, round(height / 64))  # a particle is one pixel at 64x64 and grows with the frame
    snow = state.weather == "snow"
    count = CONFIG.snowflakes if snow else CONFIG.raindrops
    index = np.arange(count)
    seed_low, seed_high = state.seed & 0xFFFFFFFF, state.seed >> 32
    start_x, start_y, speed, phase = (_hash_uniform(index, seed_low, seed_high, salt) for salt in (1, 2, 3, 4))
    tick = state.tick
    if snow:
        fall = (start_y + tick * (0.006 + 0.01 * speed)) % 1.0
        drift = (start_x + 0.02 * np.sin(phase * 6.28 + tick * 0.15)) % 1.0
        lengths: tuple[int, ...] = (size,)
        color = np.asarray((245, 248, 255), dtype=np.float32)
    else:
        fall = (start_y + tick * (0.05 + 0.04 * speed)) % 1.0
        drift = (start_x + fall * 0.05) % 1.0
        lengths, color = tuple(range(3 * size)), np.asarray((175, 185, 205), dtype=np.float32)
    columns = (drift * width).astype(np.int64)
    rows = (fall * height).astype(np.int64)
    offsets = [(down, across) for down in lengths for across in range(size)]
    return (
        np.concatenate([(rows + down) % height for down, _ in offsets]),
        np.concatenate([(columns + across + down // 3) % width for down, across in offsets]),
        color,
    )


OVERLAY_STAR, OVERLAY_PARTICLE = 1, 2


def overlay(state: WorldState, width: int = 64, height: int = 64) -> np.ndarray:
    """(H, W) uint8: where this frame shows a star (OVERLAY_STAR) or a snow or rain particle (OVERLAY_PARTICLE).

    Both are pure functions of the state (seed, tick, heading), drawn at single pixels: a small autoencoder
    cannot carry 140 snowflakes in its latent, and they need not be remembered, so the state hands them to the
    neural model like the geometric sketch. Stars are marked on the whole upper half; walls and billboards
    hide them in the frame, as the model learns from the sketch's planes.
    """
    mask = np.zeros((height, width), dtype=np.uint8)
    if state.time_of_day == "night" and state.weather == "clear":
        focal = width / 2 / math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
        plane_length = math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
        camera_x = 2 * (np.arange(width, dtype=np.float64) + 0.5) / width - 1
        azimuth = (state.pose.radians + np.arctan(camera_x * plane_length))[None, :]  # (1, W)
        rows = np.arange(height // 2, dtype=np.float32)[:, None]  # (R, 1), the sky's rows
        elevation = np.arctan((height / 2 - rows - 0.5) / focal)
        mask[: height // 2][_stars(state, azimuth, elevation)] = OVERLAY_STAR
    if state.weather != "clear":
        rows, columns, _ = _particles(state, height, width)
        mask[rows, columns] = OVERLAY_PARTICLE
    return mask


def render(state: WorldState, spec: WorldSpec, width: int = 64, height: int = 64) -> np.ndarray:
    """The view from the state's pose as a uint8 array of shape (height, width, 3)."""
    if width < 8 or height < 8:
        raise ValueError(f"frames are at least 8x8 pixels, got {width}x{height}")
    lighting = LIGHTING[state.time_of_day]
    rays = _cast(state, width)
    focal = width / 2 / math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)  # pixels, same both ways
    rows = np.arange(height, dtype=np.float32)[:, None]  # (H, 1)
    depth = rays.depth  # (W,)
    wall_height = focal / depth  # (W,) pixels
    wall_top = height / 2 - wall_height * (1 - CONFIG.eye_height)  # (W,)
    v = (rows + 0.5 - wall_top[None, :]) / wall_height[None, :]  # (H, W)
    is_wall = (v >= 0) & (v < 1)

    palette = np.asarray(spec.palette, dtype=np.float32)  # (P, 3)
    wall_color = palette[(rays.material.astype(np.int64) - 1) % len(palette)]  # (W, 3)
    wall_color = wall_color * np.where(rays.side == 1, CONFIG.side_shade, 1.0)[:, None].astype(np.float32)
    walls = wall_color[None, :, :] * _wall_texture(rays, v)[..., None] * _light(lighting, depth, state.weather)[None]
    # The sky is only ever seen above the horizon and the floor below it: each is computed on its half alone.
    horizon = height // 2
    floor, floor_depth = _floor(state, spec, rays, rows[horizon:], focal, height)
    floor = floor * _light(lighting, floor_depth, state.weather)
    sky = _sky(state, spec, lighting, rays, rows[:horizon], focal, height)
    if state.fog:
        walls = _fog(walls, np.broadcast_to(depth, is_wall.shape), lighting)
        floor = _fog(floor, floor_depth, lighting)
        sky = _fog(sky, np.full(sky.shape[:2], 6.0, dtype=np.float32), lighting)
    image = np.where(is_wall[..., None], walls, np.concatenate([sky, floor], axis=0))
    _draw_sprites(image, state, lighting, rays, focal)
    if state.weather != "clear":
        _draw_weather(image, state)
    return np.clip(image, 0, 255).astype(np.uint8)
