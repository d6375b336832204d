"""Billboards drawn in one vectorised pass give the same pixels, and the same sketch, as drawing them one by one.

The reference below is the renderer's earlier loop, kept here (and only here) as the definition of the picture."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.world import renderer
from inference.world.renderer import CONFIG, SPRITE_KINDS, SPRITES, geometric_sketch, render
from inference.world.spec import WorldSpec
from inference.world.state import CONFIG as SIMULATOR_CONFIG
from inference.world.state import Avatar, Character, Pose, WorldObject, WorldState, initial_state

SPEC = WorldSpec.from_dict({"seed": 5, "size": 12})
SCALE = SIMULATOR_CONFIG.position_scale


def _tower(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    body = (np.abs(u - 0.5) < 0.4) & (v > 0.12)
    battlements = (v <= 0.12) & (np.floor(u * 5) % 2 == 0)
    window = (np.abs(u - 0.5) < 0.06) & (v > 0.3) & (v < 0.42)
    shade = np.where(window, 0.25, 0.8 + 0.3 * u)[..., None]
    return body | battlements, color * shade, np.zeros_like(u, dtype=bool)


def _tree(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    trunk = (np.abs(u - 0.5) < 0.08) & (v > 0.72)
    crown = (v <= 0.78) & (np.abs(u - 0.5) < 0.48 * v / 0.78)
    shade = (0.8 + 0.35 * (1 - u))[..., None]
    colors = np.where(trunk[..., None], np.asarray((95, 65, 40), dtype=np.float32), color * shade)
    return trunk | crown, colors, np.zeros_like(u, dtype=bool)


def _lantern(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    post = (np.abs(u - 0.5) < 0.1) & (v > 0.32)
    lamp = (np.abs(u - 0.5) < 0.4) & (v > 0.05) & (v <= 0.32)
    colors = np.where(post[..., None], np.asarray((45, 45, 50), dtype=np.float32), color)
    return post | lamp, np.broadcast_to(colors, (*u.shape, 3)), lamp


def _crystal(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mask = np.abs(u - 0.5) * 2 + np.abs(v - 0.5) * 2 < 1
    shade = np.where(u < 0.5, 1.1, 0.75)[..., None]
    return mask, color * shade, mask & (np.abs(u - 0.5) < 0.08)


def _creature(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    body = ((u - 0.5) / 0.45) ** 2 + ((v - 0.6) / 0.38) ** 2 < 1
    eyes = (((u - 0.37) ** 2 + (v - 0.45) ** 2) < 0.005) | (((u - 0.63) ** 2 + (v - 0.45) ** 2) < 0.005)
    colors = np.where(
        eyes[..., None], np.asarray((255, 240, 120), dtype=np.float32), color * (1.1 - 0.4 * v)[..., None]
    )
    return body, colors, eyes


def _avatar(u: np.ndarray, v: np.ndarray, color: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    head = ((u - 0.5) ** 2 + (v - 0.14) ** 2) < 0.017
    body = (np.abs(u - 0.5) < 0.32) & (v > 0.27) & (v <= 0.7)
    legs = (v > 0.7) & (np.abs(u - 0.5) > 0.04) & (np.abs(u - 0.5) < 0.22)
    colors = np.where(
        head[..., None],
        np.asarray((230, 190, 160), dtype=np.float32),
        np.where(legs[..., None], np.asarray((50, 50, 70), dtype=np.float32), color),
    )
    return head | body | legs, np.broadcast_to(colors, (*u.shape, 3)), np.zeros_like(u, dtype=bool)


SHAPES_ONE_BY_ONE = {
    "tower": _tower,
    "tree": _tree,
    "lantern": _lantern,
    "crystal": _crystal,
    "creature": _creature,
    "avatar": _avatar,
}


def billboards_one_by_one(state: WorldState, width: int, focal: float) -> list[tuple[float, str, tuple, float, float]]:
    """(depth, kind, color, left, pixel_width) of each billboard in front of the camera, far to near."""
    x, y = state.pose.cell_position
    angle = state.pose.radians
    plane_length = math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
    sprites = [(item.kind, item.x / SCALE, item.y / SCALE, item.color) for item in state.objects]
    sprites += [("avatar", a.pose.x / SCALE, a.pose.y / SCALE, a.color) for a in state.avatars]
    sprites += [("avatar", c.pose.x / SCALE, c.pose.y / SCALE, c.color) for c in state.characters]
    placed = []
    for kind, sprite_x, sprite_y, color in sprites:
        relative_x, relative_y = sprite_x - x, sprite_y - y
        depth = relative_x * math.cos(angle) + relative_y * math.sin(angle)
        across = (-relative_x * math.sin(angle) + relative_y * math.cos(angle)) / plane_length
        if depth > 0.2:
            pixel_width = focal * SPRITES[kind][1] / depth
            center = width / 2 * (1 + across / depth)
            placed.append((depth, kind, color, center - pixel_width / 2, pixel_width))
    return sorted(placed, key=lambda billboard: billboard[0], reverse=True)


def draw_one_by_one(image: np.ndarray, state: WorldState, lighting, rays, focal: float) -> None:
    height, width = image.shape[:2]
    for depth, kind, color, left, pixel_width in billboards_one_by_one(state, width, focal):
        shape, sprite_height = SHAPES_ONE_BY_ONE[kind], SPRITES[kind][2]
        pixel_height = focal * sprite_height / depth
        bottom = height / 2 + focal * CONFIG.eye_height / depth
        top = bottom - pixel_height
        column_start, column_end = max(math.floor(left), 0), min(math.ceil(left + pixel_width), width)
        row_start, row_end = max(math.floor(top), 0), min(math.ceil(bottom), height)
        if column_start >= column_end or row_start >= row_end:
            continue
        u = ((np.arange(column_start, column_end) + 0.5 - left) / pixel_width)[None, :]
        v = ((np.arange(row_start, row_end) + 0.5 - top) / pixel_height)[:, None]
        u, v = np.broadcast_arrays(u, v)
        mask, colors, emissive = shape(u, v, np.asarray(color, dtype=np.float32))
        mask = mask & (u >= 0) & (u < 1) & (v >= 0) & (v < 1)
        mask &= (rays.depth[column_start:column_end] > depth)[None, :]
        lit = colors * renderer._light(lighting, np.float32(depth), state.weather)
        lit = np.where(emissive[..., None], colors, lit)
        if state.fog:
            lit = renderer._fog(lit, np.float32(depth), lighting)
        region = image[row_start:row_end, column_start:column_end]
        region[mask] = lit[mask]


def sketch_one_by_one(state: WorldState, columns: int) -> tuple[np.ndarray, ...]:
    rays = renderer._cast(state, columns)
    focal = columns / 2 / math.tan(math.radians(CONFIG.field_of_view_degrees) / 2)
    kind_of = np.zeros(columns, dtype=np.uint8)
    depth_of = np.zeros(columns, dtype=np.float32)
    u_of = np.zeros(columns, dtype=np.float32)
    color_of = np.zeros((columns, 3), dtype=np.uint8)
    centers = np.arange(columns) + 0.5
    for depth, kind, color, left, pixel_width in billboards_one_by_one(state, columns, focal):
        u = (centers - left) / pixel_width
        covered = (u >= 0) & (u < 1) & (rays.depth > depth)
        kind_of[covered] = 1 + SPRITE_KINDS.index(kind)
        depth_of[covered] = depth
        u_of[covered] = u[covered]
        color_of[covered] = color
    return kind_of, depth_of, u_of, color_of


colors = st.tuples(*[st.integers(0, 255)] * 3)
# Positions anywhere in the map, walls included: billboards then stand behind, inside and in front of walls.
positions = st.tuples(st.integers(SCALE, (SPEC.size - 1) * SCALE), st.integers(SCALE, (SPEC.size - 1) * SCALE))
people = st.lists(st.tuples(positions, colors), max_size=12)
objects = st.lists(st.tuples(st.sampled_from(SPRITE_KINDS[:-1]), positions, colors), max_size=6)


@st.composite
def worlds(draw: st.DrawFn) -> WorldState:
    state = initial_state(SPEC)
    x, y = state.pose.x, state.pose.y
    near = st.tuples(st.integers(x - 3 * SCALE, x + 3 * SCALE), st.integers(y - 3 * SCALE, y + 3 * SCALE))
    crowd = draw(people) + draw(st.lists(st.tuples(near, colors), max_size=8))
    avatars = tuple(Avatar(f"p{index}", Pose(at[0], at[1], 0), color, 0) for index, (at, color) in enumerate(crowd))
    characters = tuple(
        Character(f"c{index}", Pose(at[0], at[1], 0), color) for index, (at, color) in enumerate(draw(people))
    )
    # Two billboards at one spot make equal depths, where the order of drawing decides.
    twin: bool = draw(st.booleans())
    if avatars and twin:
        characters += (Character("twin", avatars[0].pose, (255, 0, 255)),)
    return replace(
        state,
        pose=replace(state.pose, angle=draw(st.integers(0, SIMULATOR_CONFIG.angle_steps - 1))),
        time_of_day=draw(st.sampled_from(("day", "dawn", "night"))),
        weather=draw(st.sampled_from(("clear", "rain", "snow"))),
        fog=draw(st.booleans()),
        objects=tuple(WorldObject(kind, at[0], at[1], color, False) for kind, at, color in draw(objects)),
        avatars=avatars,
        characters=characters,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=worlds(), size=st.sampled_from(((64, 64), (256, 256), (160, 90), (9, 31))))
def test_billboards_drawn_in_one_pass_match_drawing_them_one_by_one(monkeypatch, state, size) -> None:
    width, height = size
    vectorised = render(state, SPEC, width, height)
    with monkeypatch.context() as patched:
        patched.setattr(renderer, "_draw_sprites", draw_one_by_one)
        one_by_one = render(state, SPEC, width, height)

    assert np.array_equal(vectorised, one_by_one)


@settings(max_examples=150, deadline=None)
@given(state=worlds(), columns=st.sampled_from((64, 31, 256)))
def test_the_sketch_of_billboards_matches_taking_them_one_by_one(state, columns) -> None:
    sketch = geometric_sketch(state, columns)
    kind, depth, u, color = sketch_one_by_one(state, columns)

    assert np.array_equal(sketch.sprite_kind, kind)
    assert np.array_equal(sketch.sprite_depth, depth)
    assert np.array_equal(sketch.sprite_u, u)
    assert np.array_equal(sketch.sprite_color, color)


def test_a_crowd_is_drawn_the_same_as_one_by_one(monkeypatch) -> None:
    state = initial_state(SPEC)
    x, y = state.pose.x, state.pose.y
    crowd = tuple(
        Avatar(f"p{index}", Pose(x + 900 + 97 * index, y - 1500 + 131 * index, 0), (index, 200, 9), 0)
        for index in range(24)
    )
    state = replace(state, avatars=crowd)
    vectorised = render(state, SPEC, 128, 128)
    monkeypatch.setattr(renderer, "_draw_sprites", draw_one_by_one)

    assert np.array_equal(vectorised, render(state, SPEC, 128, 128))
    assert not np.array_equal(vectorised, render(replace(state, avatars=()), SPEC, 128, 128))
