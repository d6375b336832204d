"""The short leash on generation: replies end at a whole sentence, and never write another script's letters."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch
from hypothesis import given
from hypothesis import strategies as st

from inference.language.base import DecodingOutcome, GenerationSettings, cleaned, foreign_script, sentence_limited
from inference.language.local import sample

WORDS = st.sampled_from(["the", "lamp", "fog", "Eve", "keeps", "light", "café", "naïve", "tide", "3", "o'clock"])
ENDS = st.sampled_from([".", "!", "?", "…", "?!", '."', ".)"])
SENTENCES = st.lists(
    st.builds(lambda words, end: " ".join(words).capitalize() + end, st.lists(WORDS, min_size=1, max_size=6), ENDS),
    min_size=1,
    max_size=6,
)


def split(text: str, cuts: list[int]) -> list[str]:
    """`text` in pieces at the given offsets, as a tokenizer would stream it."""
    points = sorted({cut % (len(text) + 1) for cut in cuts} | {0, len(text)})
    return [text[start:end] for start, end in itertools.pairwise(points)]


@given(SENTENCES, st.integers(1, 4), st.lists(st.integers(0, 400), max_size=12))
def test_the_reply_ends_with_its_nth_sentence_however_it_is_streamed(
    sentences: list[str], limit: int, cuts: list[int]
) -> None:
    text = " ".join(sentences)
    limited = "".join(sentence_limited(split(text, cuts), limit, DecodingOutcome()))
    assert limited.strip() == " ".join(sentences[:limit])


@given(SENTENCES, st.lists(WORDS, min_size=1, max_size=5), st.lists(st.integers(0, 400), max_size=12))
def test_a_reply_that_runs_out_of_tokens_mid_sentence_is_cut_back_to_its_last_whole_sentence(
    sentences: list[str], unfinished: list[str], cuts: list[int]
) -> None:
    text = " ".join(sentences) + " " + " ".join(unfinished)
    limited = "".join(sentence_limited(split(text, cuts), 10, DecodingOutcome(ran_out=True)))
    assert limited.strip() == " ".join(sentences)


def test_a_reply_that_ends_itself_mid_sentence_or_has_no_whole_sentence_is_kept() -> None:
    assert "".join(sentence_limited(["Fog again. The lamp"], 3, DecodingOutcome())) == "Fog again. The lamp"
    assert "".join(sentence_limited(["The lamp is", " lit and"], 3, DecodingOutcome(ran_out=True))) == (
        "The lamp is lit and"
    )
    assert "".join(sentence_limited(["Fog again. The lamp.", ""], 3, DecodingOutcome(ran_out=True))) == (
        "Fog again. The lamp."
    )


def test_the_limit_stops_reading_the_model_at_the_nth_sentence() -> None:
    read: list[str] = []

    def pieces() -> Iterator[str]:
        for piece in ["One.", " Two.", " Three.", " Four.", " Five."]:
            read.append(piece)
            yield piece

    assert "".join(sentence_limited(pieces(), 2)) == "One. Two."
    assert read == ["One.", " Two.", " Three."]  # the third piece tells that the second sentence has ended


def test_cleaning_applies_the_sentence_limit_after_the_stops() -> None:
    settings = GenerationSettings(max_sentences=2)
    assert "".join(cleaned(["Hi there. How are", " you? Fine. Good."], settings)) == "Hi there. How are you?"
    unlimited = GenerationSettings(max_sentences=None)
    assert "".join(cleaned(["Hi there. How are", " you? Fine"], unlimited)) == "Hi there. How are you? Fine"


LATIN = st.text(
    st.characters(
        # The ordinal indicators and the micro sign (a Greek mu) are letters that are not Latin.
        codec="latin-1",
        exclude_categories=("Cc", "Cs"),
        exclude_characters="ªºµ",
    )
)


@given(LATIN)
def test_latin_text_with_punctuation_digits_and_diacritics_is_never_foreign(text: str) -> None:
    assert not foreign_script(text)


@given(LATIN, st.sampled_from(["ш", "ש", "中", "ع", "क", "\N{GREEK SMALL LETTER ALPHA}", "ア", "한", "٣", "ि"]), LATIN)
def test_a_letter_of_another_script_anywhere_makes_text_foreign(before: str, letter: str, after: str) -> None:
    assert foreign_script(before + letter + after)


def test_latin_letters_beyond_latin_1_and_common_symbols_stay() -> None:
    assert not foreign_script("Łódź, Ångström, œuvre — “quoted” … 3 € ✓ é")  # é: e and a combining accent


@given(
    st.lists(st.floats(-20, 20), min_size=8, max_size=8),
    st.integers(0, 2**31 - 1),
    st.one_of(st.just(0.0), st.floats(0.05, 1.5)),
)
def test_sampling_never_picks_a_forbidden_token(values: list[float], seed: int, temperature: float) -> None:
    logits = torch.tensor([values, values])  # (2, 8)
    forbidden = torch.tensor([True, False, True, True, False, True, True, True])
    logits[:, 0] = 100.0  # the forbidden favourite
    generator = torch.Generator().manual_seed(seed)
    generated = torch.tensor([[0], [4]])
    settings = GenerationSettings(temperature=temperature, top_p=0.9)
    chosen = sample(logits, generated, settings, generator, forbidden)
    assert set(chosen.tolist()) <= {1, 4}
