"""The raycaster: determinism, sizes, the geometric sketch, and what events do to the picture."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from inference.world.events import parse_event
from inference.world.renderer import SPRITE_KINDS, geometric_sketch, render
from inference.world.spec import WorldSpec
from inference.world.state import (
    Action,
    Avatar,
    Pose,
    WorldObject,
    from_snapshot,
    initial_state,
    replay,
    step,
    to_snapshot,
)

SPEC = WorldSpec.from_dict({"seed": 11, "size": 16})


def luminance(image: np.ndarray) -> np.ndarray:
    return image.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)


def walk(ticks: int, action: int = Action.FORWARD | Action.TURN_RIGHT):
    state = initial_state(SPEC)
    for _ in range(ticks):
        state = step(state, action)
    return state


def test_rendering_is_deterministic() -> None:
    state = replay(initial_state(SPEC), [(Action.FORWARD, [{"kind": "snow"}, {"kind": "spawn", "object": "tree"}])])

    assert np.array_equal(render(state, SPEC, 64, 64), render(state, SPEC, 64, 64))
    assert np.array_equal(render(state, SPEC, 64, 64), render(from_snapshot(to_snapshot(state)), SPEC, 64, 64))


@pytest.mark.parametrize(("width", "height"), [(64, 64), (256, 256), (160, 90), (9, 31)])
def test_it_renders_any_size(width: int, height: int) -> None:
    image = render(walk(10), SPEC, width, height)

    assert image.shape == (height, width, 3)
    assert image.dtype == np.uint8
    assert image.std() > 10


def test_it_refuses_a_frame_too_small_to_see() -> None:
    with pytest.raises(ValueError, match="at least 8x8"):
        render(walk(0), SPEC, 4, 64)


def test_moving_and_turning_change_the_frame() -> None:
    state = walk(5)
    frame = render(state, SPEC)

    for action in Action:
        assert not np.array_equal(render(step(state, action), SPEC), frame), action


def test_the_sketch_gives_the_depth_and_material_of_each_column() -> None:
    state = walk(0)
    for _ in range(200):
        state = step(state, Action.FORWARD)
    sketch = geometric_sketch(state, 64)

    assert sketch.depth.shape == sketch.material.shape == sketch.side.shape == sketch.texture_u.shape == (64,)
    assert (sketch.material >= 1).all()
    assert (sketch.depth > 0).all()
    assert ((sketch.texture_u >= 0) & (sketch.texture_u <= 1)).all()
    # Pressed against a wall: the column straight ahead is as near as the player's radius allows.
    assert sketch.depth[32] < 0.35
    assert geometric_sketch(walk(3), 64).depth.max() > 1.0


def test_night_darkens_the_frame_and_stays() -> None:
    day = walk(3)
    night = step(day, 0, [parse_event({"kind": "night"})])

    assert luminance(render(night, SPEC)).mean() < 0.5 * luminance(render(step(day, 0), SPEC)).mean()
    for _ in range(1000):
        night = step(night, Action.FORWARD | Action.TURN_LEFT)
    assert night.time_of_day == "night"
    assert (
        luminance(render(night, SPEC)).mean() < 0.5 * luminance(render(replace(night, time_of_day="day"), SPEC)).mean()
    )


def test_snow_adds_bright_pixels_that_fall() -> None:
    clear = walk(3)
    snowing = step(clear, 0, [parse_event({"kind": "snow"})])
    later = step(snowing, 0)

    clear_frame, snowing_frame = luminance(render(step(clear, 0), SPEC)), luminance(render(snowing, SPEC))
    # 140 flakes in 4096 pixels, and a ground that turns white.
    assert (snowing_frame > 220).mean() > (clear_frame > 220).mean() + 0.02
    assert snowing_frame[48:].mean() > clear_frame[48:].mean() + 40
    # Nothing moved but the snow: the two frames differ only by falling flakes.
    assert not np.array_equal(render(snowing, SPEC), render(later, SPEC))


def test_fog_washes_out_contrast() -> None:
    state = walk(3)

    assert render(step(state, 0, [parse_event({"kind": "fog"})]), SPEC).std() < 0.7 * render(state, SPEC).std()


def test_a_spawned_object_appears_ahead() -> None:
    state = walk(0)
    spawned = step(state, 0, [parse_event({"kind": "spawn", "object": "tower", "color": [255, 0, 255]})])
    image = render(spawned, SPEC, 64, 64).astype(np.int32)

    magenta = (image[..., 0] > 120) & (image[..., 2] > 120) & (image[..., 1] < 60)
    assert magenta[:, 24:40].sum() > 20
    sketch = geometric_sketch(spawned, 64)
    assert (sketch.sprite_kind[30:34] == 1 + SPRITE_KINDS.index("tower")).all()
    assert (sketch.sprite_color[30:34] == (255, 0, 255)).all()
    assert (sketch.sprite_depth[30:34] < sketch.depth[30:34]).all()
    assert (geometric_sketch(state, 64).sprite_kind == 0).all()


def test_walls_hide_objects_behind_them() -> None:
    state = walk(0)
    wall_distance = float(geometric_sketch(state, 64).depth[32])
    x, y = state.pose.cell_position

    def with_tower_at(distance: float):
        tower_x = x + distance * np.cos(state.pose.radians)
        tower_y = y + distance * np.sin(state.pose.radians)
        tower = WorldObject(
            kind="tower", x=int(tower_x * 1024), y=int(tower_y * 1024), color=(255, 0, 255), spawned=True
        )
        return render(replace(state, objects=(tower,)), SPEC)

    # Towers are taller than walls, so only their top rises above; the wall's own rows must stay untouched.
    wall_rows = slice(int(32 - 32 / wall_distance), 64)
    plain = render(state, SPEC)[wall_rows, 28:36]
    assert wall_distance > 1.0
    assert np.array_equal(with_tower_at(wall_distance + 1.0)[wall_rows, 28:36], plain)
    assert not np.array_equal(with_tower_at(wall_distance - 0.5)[wall_rows, 28:36], plain)


def test_an_avatar_stands_where_its_participant_is() -> None:
    state = walk(0)
    x, y = state.pose.cell_position
    ahead = Pose(
        int((x + 1.5 * np.cos(state.pose.radians)) * 1024), int((y + 1.5 * np.sin(state.pose.radians)) * 1024), 0
    )
    with_avatar = replace(state, avatars=(Avatar(name="ana", pose=ahead, color=(0, 255, 0), held=0),))
    image = render(with_avatar, SPEC, 64, 64).astype(np.int32)

    green = (image[..., 1] > 120) & (image[..., 0] < 60) & (image[..., 2] < 60)
    assert green[:, 24:40].sum() > 20
