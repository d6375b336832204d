"""The term filter shared by the platform and the worker: what each content rating refuses, and its JSON form."""

from __future__ import annotations

import json

import pytest

from inference.narrative.safety import TermFilter, refused_terms

TERMS = TermFilter(blocked=("kill yourself",), mature=("gore", "naked"), teen=("blood",))


def test_a_world_for_everyone_refuses_every_list_most_severe_first() -> None:
    text = "Blood on the stones, gore on the walls, and someone says kill yourself."
    assert refused_terms(text, rating="everyone", terms=TERMS) == ["kill yourself", "gore", "blood"]


def test_a_teen_world_allows_teen_terms_but_not_mature_ones() -> None:
    assert refused_terms("Blood drips; the gore is thick.", rating="teen", terms=TERMS) == ["gore"]
    assert refused_terms("Blood drips from the lantern.", rating="teen", terms=TERMS) == []


def test_a_mature_world_still_refuses_blocked_terms() -> None:
    assert refused_terms("N4K3D and bloody gore.", rating="mature", terms=TERMS) == []
    assert refused_terms("Just k1ll   yourself.", rating="mature", terms=TERMS) == ["kill yourself"]


def test_an_unknown_rating_is_treated_as_everyone() -> None:
    assert refused_terms("blood", rating="", terms=TERMS) == ["blood"]


def test_terms_inside_longer_words_are_not_refused() -> None:
    assert refused_terms("A bloodhound sleeps by the gorge.", rating="everyone", terms=TERMS) == []


@pytest.mark.parametrize("terms", [TERMS, TermFilter(blocked=(), mature=(), teen=())])
def test_the_lists_survive_a_json_message(terms: TermFilter) -> None:
    assert TermFilter.from_dict(json.loads(json.dumps(terms.to_dict()))) == terms


def test_lists_missing_from_a_message_are_empty() -> None:
    assert TermFilter.from_dict({"blocked": ["kys"]}) == TermFilter(blocked=("kys",), mature=(), teen=())
