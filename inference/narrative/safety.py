"""The term filter: lists of terms by severity, and which of them a world's content rating refuses.

One implementation for both sides: the platform checks submitted worlds and Live worlds' shared stream with
it, and the inference worker checks generated text with it before any player sees it. So it imports nothing
from Django; the platform reads the lists from its data file and sends them to the worker as
`TermFilter.to_dict()` inside the session-open message.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

# Mildest last, the order a moderator reads findings in.
SEVERITIES = ("blocked", "mature", "teen")
# Character swaps people use to slip words past filters; undone before matching.
LOOKALIKES = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
# What each content rating (worlds.models.ContentRating) keeps out: blocked terms always, mature-list terms
# unless the world is rated mature, teen-list terms when it is rated for everyone.
REFUSED_BY_RATING: dict[str, tuple[str, ...]] = {
    "everyone": ("blocked", "mature", "teen"),
    "teen": ("blocked", "mature"),
    "mature": ("blocked",),
}


@dataclass(frozen=True)
class TermFilter:
    """Lists of terms by severity; `found` returns, per list, the terms a text contains as whole words."""

    blocked: tuple[str, ...]
    mature: tuple[str, ...]
    teen: tuple[str, ...]

    @classmethod
    def from_dict(cls, lists: Mapping[str, Sequence[str]]) -> TermFilter:
        """The filter from lists by severity (the data file's shape, or `to_dict`'s); missing lists are empty."""
        return cls(**{severity: tuple(lists.get(severity, ())) for severity in SEVERITIES})

    def to_dict(self) -> dict[str, list[str]]:
        """The lists by severity, ready for JSON."""
        return {severity: list(getattr(self, severity)) for severity in SEVERITIES}

    def found(self, text: str) -> dict[str, list[str]]:
        normalized = " ".join(unicodedata.normalize("NFKC", text).casefold().translate(LOOKALIKES).split())
        return {
            severity: hits
            for severity in SEVERITIES
            if (hits := [term for term in getattr(self, severity) if term_pattern(term).search(normalized)])
        }


@cache
def term_pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(word) for word in term.casefold().split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)")


def refused_severities(rating: str) -> tuple[str, ...]:
    """The severities a rating keeps out; a rating this module does not know is treated as "everyone"."""
    return REFUSED_BY_RATING.get(rating, REFUSED_BY_RATING["everyone"])


def refused_terms(text: str, *, rating: str, terms: TermFilter) -> list[str]:
    """The terms in `text` that a world rated `rating` does not allow, most severe first; empty when it may pass."""
    found = terms.found(text)
    return [term for severity in refused_severities(rating) for term in found.get(severity, [])]
