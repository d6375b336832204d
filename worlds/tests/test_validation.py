"""Every authored model refuses what would break play, with the field and a reason."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from worlds.tests.factories import (
    CharacterFactory,
    HookBranchFactory,
    HookFactory,
    LoreEntryFactory,
    WorldFactory,
)

pytestmark = pytest.mark.django_db


def errors_of(instance: object) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        instance.full_clean()
    return caught.value.message_dict


def test_a_valid_world_passes() -> None:
    WorldFactory().full_clean()


def test_a_world_names_an_engine_that_exists() -> None:
    assert "unknown engine 'hologram'" in errors_of(WorldFactory.build(engine="hologram"))["engine"][0]


@pytest.mark.parametrize(
    ("parameters", "complaint"),
    [({"size": 3}, "size"), ({"weather": "lava"}, "weather"), ({"sky": "blue"}, "sky"), ({"altitude": 3}, "unknown")],
)
def test_engine_parameters_are_checked_against_the_world_spec(parameters: dict, complaint: str) -> None:
    assert complaint in errors_of(WorldFactory.build(engine_parameters=parameters))["engine_parameters"][0]


def test_a_world_needs_a_title_and_logline() -> None:
    errors = errors_of(WorldFactory.build(title="", logline=""))
    assert {"title", "logline"} <= set(errors)


def test_a_lore_entry_needs_keys_unless_it_is_constant() -> None:
    assert "keys" in errors_of(LoreEntryFactory.build(keys=[]))
    LoreEntryFactory(keys=[], constant=True).full_clean()


def test_lore_keys_must_be_texts() -> None:
    assert "keys" in errors_of(LoreEntryFactory.build(keys=["ok", 3]))
    assert "secondary_keys" in errors_of(LoreEntryFactory.build(secondary_keys="fog"))


def test_a_characters_alternate_greetings_are_a_list_of_texts() -> None:
    assert "alternate_greetings" in errors_of(CharacterFactory.build(alternate_greetings=["hi", ""]))


@pytest.mark.parametrize(
    ("trigger", "value"),
    [
        ("area", {"x": 1, "y": 2}),
        ("area", {"x": 1, "y": 2, "radius": 0}),
        ("keywords", {"keywords": []}),
        ("intent", {"intent": "  "}),
        ("beat", {}),
        ("flag", []),
    ],
)
def test_a_hook_trigger_needs_the_value_its_kind_needs(trigger: str, value: object) -> None:
    assert "trigger_value" in errors_of(HookFactory.build(trigger=trigger, trigger_value=value))


def test_a_branch_needs_example_inputs() -> None:
    assert "examples" in errors_of(HookBranchFactory.build(examples=[]))


@pytest.mark.parametrize(
    "effects",
    [
        {"teleport": True},
        {"world_events": [{"kind": "earthquake"}]},
        {"world_events": {"kind": "night"}},
        {"set_flags": "pleased"},
        {"move_to_beat": 3},
    ],
)
def test_branch_effects_are_checked(effects: dict) -> None:
    assert "effects" in errors_of(HookBranchFactory.build(effects=effects))


@pytest.mark.parametrize("trigger", ["", "teleport", "AREA"])
def test_a_hook_with_an_unknown_trigger_is_refused_by_its_choices_not_a_crash(trigger: str) -> None:
    hook = HookFactory.build(world=WorldFactory(), trigger=trigger, trigger_value={})
    with pytest.raises(ValidationError) as refused:
        hook.full_clean()
    assert "trigger" in refused.value.message_dict
