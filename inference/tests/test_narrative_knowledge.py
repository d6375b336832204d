"""What a character knows, said in its own voice."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference.narrative.knowledge import in_first_person, knowledge_sentences

PERSONA = "Eve is the lighthouse keeper. She has kept the lamp for thirty years."


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("Eve is the lighthouse keeper, in her sixties.", "I am the lighthouse keeper, in my sixties."),
        (
            "She has kept the lamp for thirty years and blames herself.",
            "I have kept the lamp for thirty years and blame myself.",
        ),
        (
            "Eve never lies, but she only tells what the player has earned.",
            "I never lie, but I only tell what you have earned.",
        ),
        ("Her brother was lost at sea; she watches the water.", "My brother was lost at sea; I watch the water."),
        ("She listens more than she talks and carries her keys.", "I listen more than I talk and carry my keys."),
        ("The island is small and quiet.", "The island is small and quiet."),
    ],
)
def test_sentences_about_the_character_are_said_in_the_first_person(written: str, said: str) -> None:
    assert in_first_person(written, "Eve", PERSONA) == said


def test_a_he_is_found_from_the_persona() -> None:
    assert in_first_person("He runs the stall and knows his regulars.", "Odo", "Odo runs a stall. He is kind.") == (
        "I run the stall and know my regulars."
    )


def test_each_sentence_is_known_once_and_the_characters_own_lines_stay_as_written() -> None:
    known = knowledge_sentences(
        name="Eve",
        persona=PERSONA,
        texts=[PERSONA, "Eve is the lighthouse keeper."],
        first_person_texts=["Ask me again."],
    )
    assert known == ["I am the lighthouse keeper.", "I have kept the lamp for thirty years.", "Ask me again."]


@given(st.text(max_size=200), st.text(min_size=1, max_size=20))
def test_any_text_is_said_without_raising(text: str, name: str) -> None:
    assert isinstance(in_first_person(text, name, PERSONA), str)
