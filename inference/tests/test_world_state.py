"""The simulator: map generation, collisions, events, snapshots and replay."""

from __future__ import annotations

import json
import math
import random
import zlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference.world.events import parse_event
from inference.world.spec import WorldSpec
from inference.world.state import (
    CONFIG,
    DIRECTION_COS,
    DIRECTION_SIN,
    SNAPSHOT_MAGIC,
    Action,
    Character,
    WorldState,
    action_from_keys,
    from_snapshot,
    initial_state,
    replay,
    step,
    to_snapshot,
)

EVENT_CHOICES = [
    {"kind": "night"},
    {"kind": "snow"},
    {"kind": "fog"},
    {"kind": "clear"},
    {"kind": "day"},
    {"kind": "spawn", "object": "crystal"},
    {"kind": "join", "name": "ana"},
    {"kind": "move", "name": "ana", "action": 1 | 32},
    {"kind": "approach", "name": "Eve"},
]


def random_inputs(seed: int, ticks: int) -> list[tuple[int, list[dict]]]:
    """A reproducible input log: mostly held keys, now and then an event."""
    rng = random.Random(seed)  # noqa: S311
    inputs = []
    for _ in range(ticks):
        events = [rng.choice(EVENT_CHOICES)] if rng.random() < 0.05 else []
        inputs.append((rng.choice([0, 1, 1, 1, 2, 4, 8, 16, 32, 1 | 16, 1 | 32]), events))
    return inputs


def world(seed: int = 1, size: int = 16) -> WorldState:
    return initial_state(WorldSpec.from_dict({"seed": seed, "size": size, "characters": [{"name": "Eve"}]}))


def test_the_map_comes_from_the_seed_alone() -> None:
    assert world(seed=4).cells == world(seed=4).cells
    assert world(seed=4).cells != world(seed=5).cells


@pytest.mark.parametrize("size", [8, 9, 16, 33, 64])
def test_the_map_is_walled_in_and_the_player_starts_on_open_floor(size: int) -> None:
    state = world(size=size)
    grid = state.grid()

    border = np.concatenate([grid[0], grid[-1], grid[:, 0], grid[:, -1]])
    assert (border > 0).all()
    assert not state.is_wall(state.pose.x, state.pose.y)
    assert 0.2 < (grid == 0).mean() < 0.9


def test_the_player_cannot_walk_through_walls() -> None:
    state = world(seed=2)
    radius = CONFIG.player_radius
    for angle in range(0, CONFIG.angle_steps, 8):
        walker = replace(state, pose=replace(state.pose, angle=angle))
        for _ in range(300):
            walker = step(walker, Action.FORWARD | Action.STRAFE_LEFT)
            for corner_x in (walker.pose.x - radius, walker.pose.x + radius):
                for corner_y in (walker.pose.y - radius, walker.pose.y + radius):
                    assert not walker.is_wall(corner_x, corner_y)


@pytest.mark.parametrize("angle", [0, 64, 128, 192])
def test_walking_straight_ends_against_a_wall(angle: int) -> None:
    state = world(seed=2)
    walker = replace(state, pose=replace(state.pose, angle=angle))
    for _ in range(300):  # 23 cells of walking, longer than any straight line in a 16-cell map
        walker = step(walker, Action.FORWARD)

    reach = CONFIG.player_radius + CONFIG.move_speed
    assert step(walker, Action.FORWARD).pose == walker.pose
    assert walker.is_wall(
        walker.pose.x + DIRECTION_COS[angle] * reach // CONFIG.position_scale,
        walker.pose.y + DIRECTION_SIN[angle] * reach // CONFIG.position_scale,
    )


def test_a_full_turn_returns_to_the_same_heading() -> None:
    state = world()
    turned = state
    for _ in range(CONFIG.angle_steps // CONFIG.turn_speed):
        turned = step(turned, Action.TURN_RIGHT)

    assert turned.pose == state.pose
    assert turned.tick == state.tick + CONFIG.angle_steps // CONFIG.turn_speed


def test_keys_map_onto_actions() -> None:
    assert action_from_keys({"KeyW", "ArrowLeft", "Space"}) == Action.FORWARD | Action.TURN_LEFT
    assert action_from_keys([]) == 0


def test_a_snapshot_restores_the_state_exactly() -> None:
    state = replay(world(), random_inputs(seed=1, ticks=300))
    snapshot = to_snapshot(state)

    assert from_snapshot(snapshot) == state
    assert len(snapshot) < 2000


def test_replaying_the_input_log_from_a_snapshot_equals_the_live_run() -> None:
    inputs = random_inputs(seed=2, ticks=400)
    live = world()
    snapshot = b""
    for tick, (action, events) in enumerate(inputs):
        if tick == 150:
            snapshot = to_snapshot(live)
        live = step(live, action, [parse_event(event) for event in events])

    assert replay(from_snapshot(snapshot), inputs[150:]) == live


def test_it_refuses_bytes_that_are_not_a_snapshot() -> None:
    with pytest.raises(ValueError, match="not a world state snapshot"):
        from_snapshot(b"hello")
    with pytest.raises(ValueError, match="version 9 is not supported"):
        from_snapshot(SNAPSHOT_MAGIC + bytes([9]) + b"x")
    with pytest.raises(ValueError, match="corrupt world state snapshot"):
        from_snapshot(to_snapshot(world())[:-5])


def test_world_events_persist_until_changed() -> None:
    state = step(world(), 0, [parse_event({"kind": "night"}), parse_event({"kind": "snow"})])
    state = replay(state, [(1, [])] * 1000)

    assert (state.time_of_day, state.weather) == ("night", "snow")
    state = replay(state, [(0, [{"kind": "fog"}]), (0, [{"kind": "clear"}])])
    assert (state.time_of_day, state.weather, state.fog) == ("night", "clear", False)


@given(
    weather=st.sampled_from(["clear", "snow", "rain"]),
    fog=st.booleans(),
    ended=st.sampled_from(["snow", "rain", "fog"]),
)
def test_ending_one_weather_leaves_the_others_as_they_were(weather: str, fog: bool, ended: str) -> None:
    events = [{"kind": weather}] + ([{"kind": "fog"}] if fog else [])
    before = step(world(), 0, [parse_event(event) for event in events])
    after = step(before, 0, [parse_event({"kind": "clear", "object": ended})])
    assert after.fog == (fog and ended != "fog")
    assert after.weather == ("clear" if weather == ended else weather)


def test_a_clear_of_a_weather_nobody_knows_is_refused() -> None:
    with pytest.raises(ValueError, match="a 'clear' event ends one of snow, rain, fog"):
        parse_event({"kind": "clear", "object": "sunshine"})


def test_a_spawned_object_stands_ahead_of_the_player_on_open_floor() -> None:
    state = step(world(), 0, [parse_event({"kind": "spawn", "object": "tower"})])
    (tower,) = state.objects
    offset_x, offset_y = tower.x - state.pose.x, tower.y - state.pose.y
    cos, sin = DIRECTION_COS[state.pose.angle], DIRECTION_SIN[state.pose.angle]
    along = (offset_x * cos + offset_y * sin) / CONFIG.position_scale
    across = (-offset_x * sin + offset_y * cos) / CONFIG.position_scale

    assert tower.kind == "tower"
    assert tower.spawned
    assert not state.is_wall(tower.x, tower.y)
    assert CONFIG.position_scale // 2 <= along <= CONFIG.spawn_max_distance
    assert abs(across) < 16


def test_spawns_beyond_the_cap_replace_the_oldest_spawn_and_keep_creator_objects() -> None:
    spec = WorldSpec.from_dict({"seed": 1, "objects": [{"kind": "tree", "x": 1.5, "y": 1.5}]})
    state = initial_state(spec)
    spawn = [parse_event({"kind": "spawn", "object": "crystal", "color": [index, 0, 0]}) for index in range(100)]
    state = step(state, 0, spawn)

    assert len(state.objects) == CONFIG.max_objects
    assert state.objects[0].kind == "tree"
    assert not state.objects[0].spawned
    assert state.objects[1].color == (100 - CONFIG.max_objects + 1, 0, 0)


def test_an_avatar_joins_walks_with_its_held_keys_and_leaves() -> None:
    state = step(world(), 0, [parse_event({"kind": "join", "name": "ana", "color": [1, 2, 3]})])
    (avatar,) = state.avatars
    state = step(state, 0, [parse_event({"kind": "move", "name": "ana", "action": int(Action.TURN_LEFT)})])
    state = step(state, 0)

    assert state.avatars[0].pose.angle == (avatar.pose.angle - 2 * CONFIG.turn_speed) % CONFIG.angle_steps
    assert state.avatars[0].color == (1, 2, 3)
    state = step(state, 0, [parse_event({"kind": "leave", "name": "ana"})])
    assert state.avatars == ()


def distance(state: WorldState, character: Character) -> float:
    return math.hypot(character.pose.x - state.pose.x, character.pose.y - state.pose.y) / CONFIG.position_scale


@pytest.mark.parametrize("seed", range(12))
def test_a_character_stands_ahead_of_the_player_facing_them_and_walks_over_when_spoken_to(seed: int) -> None:
    state = world(seed=seed)
    (eve,) = state.characters
    assert not state.is_wall(eve.pose.x, eve.pose.y)
    # In view: ahead of the player, within the field of view, and no farther than the configured distance.
    heading_x, heading_y = DIRECTION_COS[state.pose.angle], DIRECTION_SIN[state.pose.angle]
    ahead = ((eve.pose.x - state.pose.x) * heading_x + (eve.pose.y - state.pose.y) * heading_y) / 1024**2
    assert 0.4 <= ahead <= CONFIG.character_distance / CONFIG.position_scale + 0.01
    towards_player = (state.pose.x - eve.pose.x) * DIRECTION_COS[eve.pose.angle] + (
        state.pose.y - eve.pose.y
    ) * DIRECTION_SIN[eve.pose.angle]
    assert towards_player > 0
    # The player walks off, turns round and speaks: she comes over, within her budget of ticks.
    for _ in range(40):
        state = step(state, Action.BACK)
    called = step(state, 0, [parse_event({"kind": "approach", "name": "Eve"})])
    for _ in range(CONFIG.approach_max_ticks):
        called = step(called, 0)
    (eve_after,) = called.characters
    # She stood on the line the player walked back along, so nothing is between them.
    assert eve_after.approaching == 0
    assert distance(called, eve_after) <= CONFIG.talking_distance / CONFIG.position_scale + 0.1


def test_characters_are_placed_where_the_creator_put_them_and_kept_in_snapshots() -> None:
    spec = WorldSpec.from_dict({"seed": 3, "size": 12, "characters": [{"name": "Odo", "x": 5.5, "y": 5.5}]})
    state = initial_state(spec)
    (odo,) = state.characters
    assert not state.is_wall(odo.pose.x, odo.pose.y)
    called = step(state, 0, [parse_event({"kind": "approach", "name": "Odo"})])
    assert from_snapshot(to_snapshot(called)) == called
    # A character the world does not hold is not called over.
    assert step(state, 0, [parse_event({"kind": "approach", "name": "Nobody"})]).characters == state.characters


def test_a_snapshot_from_before_worlds_held_characters_restores_without_them() -> None:
    state = replace(world(), characters=())
    document = json.loads(zlib.decompress(to_snapshot(state)[len(SNAPSHOT_MAGIC) + 1 :]))
    del document["characters"]
    older = SNAPSHOT_MAGIC + bytes([1]) + zlib.compress(json.dumps(document).encode())
    assert from_snapshot(older) == state
