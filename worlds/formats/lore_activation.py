"""Which lorebook entries reach the prompt, following SillyTavern's World Info activation.

The rules are those of SillyTavern's `checkWorldInfo` (public/scripts/world-info.js, described at
docs.sillytavern.app under "World Info"), so a book imported from there behaves as its author tested it:

- Only the last `scan_depth` messages are scanned (SillyTavern's default depth, 2, when the book sets none).
- An entry matches when any primary key is found. A key written `/pattern/flags` is a regular expression;
  any other key is plain text, compared case-insensitively unless the entry is case-sensitive, and as a
  whole word when it is a single word (several words are found as a substring, as SillyTavern does).
- A selective entry with secondary keys also needs its secondary logic to hold: AND ANY (one secondary
  key found), NOT ALL (not every one found), NOT ANY (none found), AND ALL (every one found).
- Constant entries match without keys; disabled entries and entries with empty content never activate.
- A matched entry with `use_probability` activates with `probability` percent chance, rolled once.
- With recursive scanning, the content of activated entries is scanned too, for at most
  `max_recursion_steps` rounds; `prevent_recursion` entries add nothing to that text and
  `exclude_recursion` entries cannot be activated by it.
- Entries claim the token budget in SillyTavern's order of importance, highest `insertion_order` first (then
  highest priority); the first entry that does not fit ends activation. The result comes in prompt order:
  lowest `insertion_order` first.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable

from worlds.formats.lorebooks import Lorebook, LoreEntry

DEFAULT_SCAN_DEPTH = 2  # SillyTavern's default "Scan Depth"
DEFAULT_MAX_RECURSION_STEPS = 5  # SillyTavern's "Max Recursion Steps" is unbounded by default; a loop must end
_REGEX_KEY = re.compile(r"^/([\s\S]+?)/([gimsuy]*)$")  # SillyTavern's parseRegexFromString
_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}  # g, u and y change nothing for a search


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: 1.3 tokens a word, rounded up."""
    return math.ceil(len(text.split()) * 1.3)


def active_entries(
    book: Lorebook,
    recent_messages: list[str],
    token_counter: Callable[[str], int] | None = None,
    *,
    max_recursion_steps: int = DEFAULT_MAX_RECURSION_STEPS,
    random_source: random.Random | None = None,
) -> list[LoreEntry]:
    """The entries of `book` that the latest messages activate, in prompt order, within the token budget.

    `random_source` rolls the probability checks; pass a seeded `random.Random` for repeatable results.
    """
    count_tokens = token_counter or estimate_tokens
    rolls = random_source or random.Random()  # noqa: S311 - a story's lore, not a secret
    depth = DEFAULT_SCAN_DEPTH if book.scan_depth is None else book.scan_depth
    chat = "\n".join(recent_messages[-depth:]) if depth > 0 else ""
    recursive = book.recursive_scanning is not False

    candidates = [(index, entry) for index, entry in enumerate(book.entries) if entry.enabled and entry.content]
    candidates.sort(key=lambda item: (-item[1].insertion_order, -(item[1].priority or 0), item[0]))
    activated: dict[int, LoreEntry] = {}
    failed_rolls: set[int] = set()
    spent = 0
    recursion_text = ""
    step = 0
    while True:
        scan_text = chat + recursion_text
        newly_activated: list[LoreEntry] = []
        for index, entry in candidates:
            if index in activated or index in failed_rolls or (step > 0 and entry.exclude_recursion):
                continue
            if not (entry.constant or _entry_matches(entry, scan_text)):
                continue
            if entry.use_probability and entry.probability < 100 and rolls.random() * 100 >= entry.probability:
                failed_rolls.add(index)
                continue
            tokens = count_tokens(entry.content)
            if book.token_budget is not None and spent + tokens > book.token_budget:
                return _in_prompt_order(activated)
            spent += tokens
            activated[index] = entry
            newly_activated.append(entry)
        feed = [entry.content for entry in newly_activated if not entry.prevent_recursion]
        if not recursive or not feed or step >= max_recursion_steps:
            return _in_prompt_order(activated)
        recursion_text += "\n" + "\n".join(feed)
        step += 1


def _in_prompt_order(activated: dict[int, LoreEntry]) -> list[LoreEntry]:
    ordered = sorted(activated.items(), key=lambda item: (item[1].insertion_order, -(item[1].priority or 0), item[0]))
    return [entry for _, entry in ordered]


def _entry_matches(entry: LoreEntry, text: str) -> bool:
    if not any(_key_found(key, text, entry) for key in entry.keys):
        return False
    if not (entry.selective and entry.secondary_keys):
        return True
    found = [_key_found(key, text, entry) for key in entry.secondary_keys]
    match entry.selective_logic:
        case "and_any":
            return any(found)
        case "not_all":
            return not all(found)
        case "not_any":
            return not any(found)
        case _:  # "and_all"
            return all(found)


def _key_found(key: str, text: str, entry: LoreEntry) -> bool:
    pattern = _regex_key(key)
    if pattern is not None:
        return pattern.search(text) is not None
    key = key.strip()
    if not key:
        return False
    if not entry.case_sensitive:
        key, text = key.lower(), text.lower()
    if entry.match_whole_words is False or len(key.split()) > 1:
        return key in text
    return re.search(rf"(?:^|\W){re.escape(key)}(?:$|\W)", text) is not None


@functools.lru_cache(maxsize=1024)
def _regex_key(key: str) -> re.Pattern[str] | None:
    """The compiled pattern of a `/pattern/flags` key; None for a plain key. A pattern that does not compile
    never matches, as the CCv3 spec requires, so it gives a pattern that matches nothing."""
    written = _REGEX_KEY.match(key)
    if written is None:
        return None
    source, flag_letters = written.groups()
    flags = 0
    for letter in flag_letters:
        flags |= _REGEX_FLAGS.get(letter, 0)
    try:
        return re.compile(source, flags)
    except re.error:
        return re.compile(r"(?!)")
