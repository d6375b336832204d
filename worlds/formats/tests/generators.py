"""Random, repeatable values for the round-trip property tests, standing in for hypothesis (not installed).

Each test runs over many seeds; a failing seed reproduces exactly. The alphabet leans on the characters
the formats escape or split on.
"""

from __future__ import annotations

import random

TRICKY = ["[", "]", "{", "}", "\\", "|", "->", "<-", ":", "::", '"', "'", "\n", "\t", " ", "é", "灯", "🌊", "\u2028"]
PLAIN = list("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789.,!?")


def seeded(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 - test data, not secrets


def random_text(rolls: random.Random, *, max_length: int = 40, tricky: bool = True) -> str:
    pieces = PLAIN + TRICKY if tricky else PLAIN
    return "".join(rolls.choice(pieces) for _ in range(rolls.randint(0, max_length)))


def random_word(rolls: random.Random) -> str:
    return "".join(rolls.choice("abcdefghijklmnopqrstuvwxyzé") for _ in range(rolls.randint(1, 10)))


def random_json(rolls: random.Random, depth: int = 0) -> object:
    """A JSON value as extensions hold them: nested objects and lists of scalars."""
    kind = rolls.choice(["text", "number", "flag", "null", "list", "object"] if depth < 3 else ["text", "number"])
    if kind == "text":
        return random_text(rolls, max_length=12)
    if kind == "number":
        return rolls.choice([rolls.randint(-1000, 1000), rolls.random()])
    if kind == "flag":
        return rolls.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [random_json(rolls, depth + 1) for _ in range(rolls.randint(0, 3))]
    return {random_word(rolls): random_json(rolls, depth + 1) for _ in range(rolls.randint(0, 3))}
