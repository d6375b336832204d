"""What a character knows, sentence by sentence and in its own voice: a question about the world or about the
character ("Who are you?", "How many stairs are there?") is grounded in one of these, as a question about the
player is grounded in what the player told (inference.narrative.recollection).

Creators write personas and world rules about the character in the third person ("Eve is the lighthouse
keeper… She has kept the lamp for thirty years"). Said back as written, the character would speak of
itself as of a stranger, so sentences whose subject is the character are turned into the first person
("I am the lighthouse keeper… I have kept the lamp for thirty years"); the rest (lore, clues, the world's
rules about other things) are said as the creator wrote them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SENTENCE = re.compile(r"[^.!?]+[.!?]*")
# A third-person verb after a new "I": the forms that are not a plain "-s" ending.
ADVERBS = {"never", "always", "only", "still", "often", "rarely", "also", "just", "sometimes", "usually", "already"}
SUBJECT_BEFORE = {"", "and", "but", "that", "because", "than", "when", "if", "so", "while", "as", "where"}
THE_PLAYER = (
    (re.compile(r"\bthe player's\b", re.I), "your"),
    (re.compile(r"\bthe player (?:has)\b", re.I), "you have"),
    (re.compile(r"\bthe player (?:is)\b", re.I), "you are"),
    (re.compile(r"\bthe player (?:was)\b", re.I), "you were"),
    (re.compile(r"\bthe player\b", re.I), "you"),
)
FIRST_PERSON_VERBS = {"is": "am", "has": "have", "does": "do", "goes": "go", "was": "was", "isn't": "am not"}
PHRASE_ENDS = {"and", "but", "or", "that", "when", "to", "if", "because", "as", "than", "so"}


def pronouns_of(name: str, persona: str) -> tuple[str, str, str, str]:
    """(subject, object, possessive, reflexive) the persona uses for the character: she, he, or they."""
    counts = {
        "she": len(re.findall(r"\b(she|her|herself)\b", persona, re.I)),
        "he": len(re.findall(r"\b(he|him|his|himself)\b", persona, re.I)),
    }
    if counts["she"] > counts["he"]:
        return ("she", "her", "her", "herself")
    if counts["he"] > counts["she"]:
        return ("he", "him", "his", "himself")
    return ("they", "them", "their", "themselves")


def in_first_person(sentence: str, name: str, persona: str) -> str:
    """`sentence` as the character says it, when it is about the character; otherwise unchanged."""
    subject, object_, possessive, reflexive = pronouns_of(name, persona)
    for pattern, said in THE_PLAYER:
        sentence = pattern.sub(said, sentence)
    opening = re.match(rf"^\s*(?:{re.escape(name)}|{subject}|{possessive})\b", sentence, re.I)
    if opening is None:
        return sentence
    pieces = re.split(r"(\b[\w']+\b)", sentence)
    previous = ""
    after_i = False
    for position, piece in enumerate(pieces):
        if not re.match(r"[\w']", piece):
            if re.search(r"[,;:]", piece):
                previous = ""  # a new clause, whose "she" is the character again
            continue
        lowered = piece.lower()
        replacement: str | None = None
        if lowered in (name.lower(), subject) and previous in SUBJECT_BEFORE:
            replacement = "I"
        elif lowered == f"{name.lower()}'s" or (lowered == possessive and possessive != object_):
            replacement = "my"
        elif lowered == reflexive:
            replacement = "myself"
        elif lowered == object_ and possessive == object_:
            # "her" is "my" before a word of hers ("her keys") and "me" where a phrase ends ("tell her.").
            following = pieces[position + 1] if position + 1 < len(pieces) else ""
            next_word = pieces[position + 2].lower() if following == " " and position + 2 < len(pieces) else ""
            replacement = "my" if next_word and next_word not in PHRASE_ENDS else "me"
        elif lowered == object_:
            replacement = "me"
        elif after_i and lowered in ADVERBS:
            previous = lowered
            continue  # "I never lies" still needs its verb turned
        elif after_i or (previous == "and" and conjoined_to_i(pieces, position)):
            replacement = FIRST_PERSON_VERBS.get(lowered) or plain_verb(lowered)
        after_i = replacement == "I"
        if replacement is not None and replacement != lowered:
            capitalised = piece[:1].isupper() and replacement != "I"
            pieces[position] = replacement.capitalize() if capitalised else replacement
        previous = lowered
    text = "".join(pieces)
    return text[:1].upper() + text[1:]


def conjoined_to_i(pieces: list[str], position: int) -> bool:
    """Whether the verb after an "and" shares the clause's subject "I" ("I keep the lamp and blame myself")."""
    before = "".join(pieces[:position])
    clause = re.split(r"[,;.]", before)[-1]
    return bool(re.match(r"^\s*I\b", clause))


def plain_verb(word: str) -> str | None:
    """A third-person verb ("keeps", "watches", "carries") in the form that follows "I"; None when it is not one."""
    if not word.endswith("s") or word.endswith(("ss", "us", "is")) or len(word) < 4:
        return None
    if word.endswith("ies") and len(word) > 4:  # "carries", but "lies"
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    return word[:-1]


def knowledge_sentences(
    *, name: str, persona: str, texts: Sequence[str], first_person_texts: Sequence[str] = ()
) -> list[str]:
    """Every sentence of `texts` once, in the character's voice, then `first_person_texts` (lines the character
    already says itself, as in its example dialogue) as they are."""
    seen: dict[str, str] = {}
    for text in texts:
        for match in SENTENCE.finditer(text):
            sentence = match.group().strip()
            if len(sentence.split()) >= 3:
                said = in_first_person(sentence, name, persona)
                seen.setdefault(said.lower(), said if said[-1] in ".!?" else f"{said}.")
    for line in first_person_texts:
        if len(line.split()) >= 3:
            seen.setdefault(line.lower(), line)
    return list(seen.values())
