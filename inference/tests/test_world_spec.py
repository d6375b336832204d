"""World spec validation: defaults, and a clear ValueError for each kind of mistake."""

from __future__ import annotations

import pytest

from inference.world.spec import CONFIG, WorldSpec


def test_missing_keys_take_their_defaults() -> None:
    spec = WorldSpec.from_dict({"seed": 7})

    assert spec.seed == 7
    assert spec.size == CONFIG.default_size
    assert spec.palette == CONFIG.default_palette
    assert (spec.time_of_day, spec.weather, spec.fog, spec.objects) == ("day", "clear", False, ())


def test_a_spec_survives_its_dict_form() -> None:
    spec = WorldSpec.from_dict(
        {
            "seed": 3,
            "size": 12,
            "palette": [[200, 10, 10], [10, 200, 10]],
            "sky": [1, 2, 3],
            "floor": [4, 5, 6],
            "time_of_day": "night",
            "weather": "snow",
            "fog": True,
            "objects": [{"kind": "tree", "x": 2.5, "y": 3}],
        }
    )

    assert WorldSpec.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"seeds": 1}, "unknown world spec keys: seeds"),
        ({"seed": -1}, "seed must be an integer"),
        ({"seed": "1"}, "seed must be an integer"),
        ({"size": 4}, "size must be an integer 8..64"),
        ({"size": True}, "size must be an integer"),
        ({"palette": []}, "palette must be a list of 1..8"),
        ({"palette": [[0, 0, 300]]}, r"palette\[0\] must be \[r, g, b\]"),
        ({"sky": "blue"}, r"sky must be \[r, g, b\]"),
        ({"time_of_day": "noon"}, "time_of_day must be one of day, dawn, night"),
        ({"weather": "hail"}, "weather must be one of clear, snow, rain"),
        ({"fog": "yes"}, "fog must be true or false"),
        ({"objects": [{"kind": "castle", "x": 1, "y": 1}]}, r"objects\[0\].kind must be one of"),
        ({"objects": [{"kind": "tree", "x": 99, "y": 1}]}, r"objects\[0\].x must be a number strictly between"),
        ({"objects": [{"kind": "tree", "x": 1, "y": float("nan")}]}, r"objects\[0\].y must be a number"),
        ({"objects": [{"kind": "tree", "x": 1, "y": 1, "z": 0}]}, r"objects\[0\] has unknown keys: z"),
        ({"characters": [{"name": ""}]}, r"characters\[0\].name must be 1..150 characters"),
        ({"characters": [{"name": "Eve", "x": 2}]}, r"characters\[0\] needs both x and y"),
        ({"characters": [{"name": "Eve", "mood": "calm"}]}, r"characters\[0\] has unknown keys: mood"),
        ({"characters": [{"name": f"c{index}"} for index in range(9)]}, "characters must be a list of at most 8"),
    ],
)
def test_it_rejects_a_bad_spec_with_a_clear_message(spec: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WorldSpec.from_dict(spec)


def test_it_rejects_a_spec_that_is_not_a_dict() -> None:
    with pytest.raises(ValueError, match="must be a dict"):
        WorldSpec.from_dict([("seed", 1)])  # type: ignore[arg-type]
