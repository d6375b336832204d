"""Lore activation follows SillyTavern's World Info rules, one test per rule."""

from __future__ import annotations

import random
from collections.abc import Callable

from worlds.formats import Lorebook, LoreEntry, active_entries, estimate_tokens, lorebook_from_v3


def entry(keys: list[str], content: str = "", **settings: object) -> LoreEntry:
    return LoreEntry(keys=keys, content=content or f"About {keys[0] if keys else 'nothing'}.", **settings)


def activated(book: Lorebook, *messages: str, **options: object) -> list[str]:
    return [found.content for found in active_entries(book, list(messages), **options)]


class FixedRolls(random.Random):
    """A random source whose rolls are given in advance."""

    def __init__(self, *rolls: float) -> None:
        super().__init__()
        self.rolls = list(rolls)

    def random(self) -> float:
        return self.rolls.pop(0)


def test_a_key_in_the_recent_messages_activates_its_entry() -> None:
    book = Lorebook(entries=[entry(["lamp"], "The lamp."), entry(["tide"], "The tide.")])
    assert activated(book, "Is the lamp lit?") == ["The lamp."]


def test_only_the_last_scan_depth_messages_are_scanned() -> None:
    book = Lorebook(entries=[entry(["lamp"], "The lamp.")], scan_depth=1)
    assert activated(book, "the lamp", "hello") == []
    assert activated(book, "hello", "the lamp") == ["The lamp."]


def test_without_a_scan_depth_the_last_two_messages_are_scanned() -> None:
    book = Lorebook(entries=[entry(["lamp"], "The lamp.")])
    assert activated(book, "the lamp", "one", "two") == []
    assert activated(book, "the lamp", "one") == ["The lamp."]


def test_a_scan_depth_of_zero_scans_nothing() -> None:
    book = Lorebook(entries=[entry(["lamp"])], scan_depth=0)
    assert activated(book, "the lamp") == []


def test_keys_match_case_insensitively_unless_the_entry_is_case_sensitive() -> None:
    loose = Lorebook(entries=[entry(["Brine"])])
    strict = Lorebook(entries=[entry(["Brine"], case_sensitive=True)])
    assert activated(loose, "we sailed from brine") == ["About Brine."]
    assert activated(strict, "we sailed from brine") == []
    assert activated(strict, "we sailed from Brine.") == ["About Brine."]


def test_a_single_word_key_matches_whole_words_only() -> None:
    book = Lorebook(entries=[entry(["lamp"])])
    assert activated(book, "the lamplight flickers") == []
    assert activated(book, "the lamp, flickering") == ["About lamp."]


def test_whole_word_matching_can_be_turned_off_per_entry() -> None:
    book = Lorebook(entries=[entry(["lamp"], match_whole_words=False)])
    assert activated(book, "the lamplight flickers") == ["About lamp."]


def test_a_key_of_several_words_matches_as_a_phrase() -> None:
    book = Lorebook(entries=[entry(["ninth step"])])
    assert activated(book, "Mind the NINTH STEP!") == ["About ninth step."]
    assert activated(book, "the ninth, a step") == []


def test_a_slash_delimited_key_is_a_regular_expression_with_flags() -> None:
    book = Lorebook(entries=[entry([r"/\bfog(horn)?s?\b/i"], "Fog rule.")])
    assert activated(book, "The FOGHORN again.") == ["Fog rule."]
    assert activated(book, "foggy morning") == []


def test_a_regular_expression_without_the_i_flag_is_case_sensitive() -> None:
    book = Lorebook(entries=[entry(["/Marguerite/"], "The wreck.")])
    assert activated(book, "the marguerite") == []
    assert activated(book, "the Marguerite") == ["The wreck."]


def test_an_invalid_regular_expression_never_matches() -> None:
    book = Lorebook(entries=[entry(["/fog(/"], "Broken."), entry(["fog"], "Plain.")])
    assert activated(book, "fog( and more fog") == ["Plain."]


def test_secondary_keys_and_any_needs_one_of_them() -> None:
    book = Lorebook(entries=[entry(["causeway"], "Crossing.", selective=True, secondary_keys=["cross", "walk"])])
    assert activated(book, "the causeway is dry") == []
    assert activated(book, "can we walk the causeway") == ["Crossing."]


def test_secondary_keys_not_all_needs_one_of_them_missing() -> None:
    book = Lorebook(
        entries=[entry(["causeway"], "X.", selective=True, secondary_keys=["cross", "walk"], selective_logic="not_all")]
    )
    assert activated(book, "cross the causeway") == ["X."]
    assert activated(book, "cross the causeway on a walk") == []


def test_secondary_keys_not_any_needs_all_of_them_missing() -> None:
    book = Lorebook(
        entries=[
            entry(["Anchor"], "Landlord.", selective=True, secondary_keys=["debt", "owes"], selective_logic="not_any")
        ]
    )
    assert activated(book, "a drink at the Anchor") == ["Landlord."]
    assert activated(book, "the Anchor owes her") == []


def test_secondary_keys_and_all_needs_every_one() -> None:
    book = Lorebook(
        entries=[entry(["lamp"], "Relight.", selective=True, secondary_keys=["wick", "oil"], selective_logic="and_all")]
    )
    assert activated(book, "the lamp needs a wick") == []
    assert activated(book, "the lamp needs a wick and oil") == ["Relight."]


def test_secondary_keys_are_ignored_when_the_entry_is_not_selective() -> None:
    book = Lorebook(entries=[entry(["lamp"], "Lamp.", selective=False, secondary_keys=["never said"])])
    assert activated(book, "the lamp") == ["Lamp."]


def test_a_constant_entry_is_always_active() -> None:
    book = Lorebook(entries=[entry(["fog"], "Fog rule.", constant=True)])
    assert activated(book, "nothing about weather") == ["Fog rule."]
    assert activated(book) == ["Fog rule."]


def test_a_disabled_entry_is_never_active_even_when_constant() -> None:
    book = Lorebook(entries=[entry(["fog"], "Fog.", enabled=False), entry([], "Always.", constant=True, enabled=False)])
    assert activated(book, "fog everywhere") == []


def test_an_entry_with_empty_content_adds_nothing() -> None:
    book = Lorebook(entries=[LoreEntry(keys=["fog"], content="")])
    assert activated(book, "fog") == []


def test_activated_content_is_scanned_for_further_keys() -> None:
    book = Lorebook(
        entries=[entry(["lamp"], "The lamp burns oil from Brine."), entry(["Brine"], "Brine is a village.")]
    )
    assert activated(book, "the lamp") == ["The lamp burns oil from Brine.", "Brine is a village."]


def test_recursion_is_off_when_the_book_says_so() -> None:
    book = Lorebook(
        entries=[entry(["lamp"], "The lamp burns oil from Brine."), entry(["Brine"], "A village.")],
        recursive_scanning=False,
    )
    assert activated(book, "the lamp") == ["The lamp burns oil from Brine."]


def test_a_prevent_recursion_entry_activates_nothing_with_its_content() -> None:
    book = Lorebook(
        entries=[
            entry(["lamp"], "The lamp burns oil from Brine.", prevent_recursion=True),
            entry(["Brine"], "A village."),
        ]
    )
    assert activated(book, "the lamp") == ["The lamp burns oil from Brine."]


def test_an_exclude_recursion_entry_is_not_activated_by_other_entries() -> None:
    book = Lorebook(
        entries=[
            entry(["lamp"], "The lamp burns oil from Brine."),
            entry(["Brine"], "A village.", exclude_recursion=True),
        ]
    )
    assert activated(book, "the lamp") == ["The lamp burns oil from Brine."]
    assert activated(book, "the lamp", "oil from Brine") == ["The lamp burns oil from Brine.", "A village."]


def test_recursion_stops_after_its_step_limit() -> None:
    chain = [entry([f"link{index}"], f"Then link{index + 1}.", insertion_order=index) for index in range(10)]
    book = Lorebook(entries=chain)
    assert len(activated(book, "link0", max_recursion_steps=3)) == 4
    assert len(activated(book, "link0")) == 6  # the first scan and five recursion steps


def test_entries_come_in_insertion_order_then_priority() -> None:
    book = Lorebook(
        entries=[
            entry(["fog"], "Late.", insertion_order=200),
            entry(["fog"], "Early, low priority.", insertion_order=10, priority=1),
            entry(["fog"], "Early, high priority.", insertion_order=10, priority=9),
        ]
    )
    assert activated(book, "fog") == ["Early, high priority.", "Early, low priority.", "Late."]


def test_the_token_budget_goes_to_the_highest_insertion_order_first() -> None:
    book = Lorebook(
        entries=[
            entry(["fog"], "one two three", insertion_order=10),
            entry(["fog"], "four five six", insertion_order=300),
            entry(["fog"], "seven eight nine", insertion_order=200),
        ],
        token_budget=6,
    )
    words = len
    counter: Callable[[str], int] = lambda text: words(text.split())  # noqa: E731
    assert activated(book, "fog", token_counter=counter) == ["seven eight nine", "four five six"]


def test_activation_stops_at_the_first_entry_over_the_budget() -> None:
    book = Lorebook(
        entries=[
            entry(["fog"], "a long entry of many words that cannot fit", insertion_order=300),
            entry(["fog"], "short", insertion_order=100),
        ],
        token_budget=5,
    )
    assert activated(book, "fog") == []


def test_the_default_token_count_is_words_times_one_point_three_rounded_up() -> None:
    assert estimate_tokens("one two three") == 4
    assert estimate_tokens("") == 0
    assert estimate_tokens("ten words " * 5) == 13


def test_probability_rolls_once_per_matched_entry() -> None:
    book = Lorebook(entries=[entry(["wreck"], "The wreck.", probability=50)])
    assert activated(book, "a wreck", random_source=FixedRolls(0.3)) == ["The wreck."]
    assert activated(book, "a wreck", random_source=FixedRolls(0.7)) == []


def test_probability_is_ignored_when_the_entry_does_not_use_it() -> None:
    book = Lorebook(entries=[entry(["wreck"], "The wreck.", probability=0, use_probability=False)])
    assert activated(book, "a wreck", random_source=FixedRolls()) == ["The wreck."]


def test_an_imported_lorebook_behaves_as_its_author_set_it_up(fixture_bytes: Callable[[str], bytes]) -> None:
    book = lorebook_from_v3(fixture_bytes("saltmarsh_lorebook_v3.json"))
    assert activated(book, "We walked the causeway.") == []  # selective: needs flood or tide too
    # In prompt order (insertion orders 80, 90, 100); Brine comes by recursion, from the causeway entry.
    assert activated(book, "The causeway floods with the tide.", "Is that the tower?") == [
        "Brine is a fishing village of forty houses.",
        "The causeway to Brine floods twice a day.",
        "The Saltmarsh Light is a granite tower of 112 steps at the end of the causeway.",
    ]
