"""Cleaning streamed replies: role labels, special tokens and stop sequences, however the text is split."""

from __future__ import annotations

from collections.abc import Iterator

from inference.language.base import GenerationSettings, cleaned


def clean(
    pieces: list[str], *, stop: tuple[str, ...] = (), continuation: bool = False, speaker: str | None = None
) -> str:
    return "".join(cleaned(pieces, GenerationSettings(stop=stop), continuation=continuation, speaker=speaker))


def test_a_stop_split_across_pieces_never_leaks() -> None:
    assert clean(["The fog is thick tonight.", "\nUs", "er: and then"]) == "The fog is thick tonight."


def test_chatml_end_of_turn_ends_the_reply() -> None:
    assert clean(["Welcome to the harbour, traveller.<|im", "_end|>\n<|im_start|>user"]) == (
        "Welcome to the harbour, traveller."
    )


def test_a_leading_role_label_and_the_speakers_name_are_dropped() -> None:
    assert clean(["assistant\n", "The tide is ", "high today, friend."]) == "The tide is high today, friend."
    assert clean(["Eve: ", "The tide is high today, friend."], speaker="Eve") == "The tide is high today, friend."


def test_a_continuation_keeps_its_leading_space_and_any_label_like_start() -> None:
    assert clean([" at the docks", ", under the crates."], continuation=True) == " at the docks, under the crates."


def test_custom_stops_apply_and_text_after_them_is_not_consumed() -> None:
    consumed: list[str] = []

    def pieces() -> Iterator[str]:
        for piece in ["1. Open the door\n", "2. Run away\n3.", " Sing", " a song", " loudly"]:
            consumed.append(piece)
            yield piece

    out = "".join(cleaned(pieces(), GenerationSettings(stop=("\n3.",))))
    assert out == "1. Open the door\n2. Run away"
    assert len(consumed) == 2  # the model is not asked for text nobody will see


def test_stray_special_tokens_inside_a_reply_are_removed() -> None:
    assert clean(["The lantern <|reserved_7|>glows softly by the quay."]) == "The lantern glows softly by the quay."


def test_a_short_reply_with_no_stop_comes_out_whole() -> None:
    assert clean(["Yes."]) == "Yes."
