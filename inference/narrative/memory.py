"""What a character remembers of a player, and which memories reach the prompt: Park et al., "Generative
Agents: Interactive Simulacra of Human Behavior" (2023), section 4.1, retrieval by recency, importance and
relevance.

Each memory is scored `relevance_weight * relevance + recency_weight * recency + importance_weight *
importance`:

- relevance: the cosine similarity of the memory's embedding to the query's, min-max normalised over the
  memories scored, as the paper does, so the scale of the embedder's cosines does not matter;
- recency: `decay ** turns_since`, the paper's exponential decay (0.995 per game hour there) counted in
  conversation turns, which is the clock a chat has; left in [0, 1] rather than min-max normalised, because
  normalising would stretch the gap between turn 39 and turn 40 to the full range;
- importance: a number in [0, 1] stored with the memory. The paper asks the model to rate it from 1 to 10;
  a 135M model cannot rate reliably, so `importance_of` uses documented rules, and pinned facts are 1.

The paper weighs the three equally; relevance counts double here, because a player's question about one
fact must find it among forty turns of other talk (the evaluation's memory_recall_at5). Pinned memories
always come first; the rest follow by score until the token budget is spent. The scan is exact: one
matrix-vector product over float32 rows, cheap enough at 10,000 memories that no approximate index is needed.

Episodic memories are extracted from what the player says by rules (`extract_memories`), and every
`ConsolidationConfig.every_turns` turns the newest of them are consolidated into one summary memory
(`consolidate`), extractively, so a summary never states what the player did not say.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inference.narrative.player_facts import tells_own_name

PINNED, EPISODIC, SUMMARY = "pinned", "episodic", "summary"


@dataclass(frozen=True)
class RetrievalConfig:
    """Weights and budget of retrieval."""

    # Relevance leads: a question names what it is about, and the answer may be forty turns old.
    relevance_weight: float = 1.0
    # Recency and importance break ties between comparably relevant memories, as in the paper.
    recency_weight: float = 0.5
    importance_weight: float = 0.5
    # Per turn: half-life of about 35 turns, a long evening's conversation.
    recency_decay: float = 0.98
    # Tokens of memories per prompt: room for a handful of facts beside persona and lore in a 2k context.
    token_budget: int = 200
    # Fewer than this many memories never fill a prompt, however cheap they are.
    limit: int = 8


# Where an answer to a question about the player is looked for: by relevance alone, and more of it than a prompt
# holds, since what the player told may be forty turns old and a prompt's pick favours the last few turns.
RECOLLECTION_RETRIEVAL = RetrievalConfig(recency_weight=0.0, limit=16, token_budget=800)


@dataclass(frozen=True)
class Memory:
    """One memory as the platform stores it."""

    text: str
    importance: float  # 0 to 1
    turn: int  # the turn that created it
    kind: str = EPISODIC  # PINNED, EPISODIC or SUMMARY


@dataclass(frozen=True)
class MemoryArrays:
    """A (character, player)'s memories as arrays, for scoring them all at once."""

    embeddings: np.ndarray  # (N, D) float32 unit rows
    importance: np.ndarray  # (N,) float32
    turns: np.ndarray  # (N,) int64
    pinned: np.ndarray  # (N,) bool
    tokens: np.ndarray  # (N,) int64, the estimated prompt cost of each text

    @classmethod
    def build(cls, memories: Sequence[Memory], embeddings: np.ndarray) -> MemoryArrays:
        """Arrays for `memories`, whose embeddings (N, D) are in the same order."""
        return cls(
            embeddings=np.ascontiguousarray(embeddings, dtype=np.float32),
            importance=np.array([memory.importance for memory in memories], dtype=np.float32),
            turns=np.array([memory.turn for memory in memories], dtype=np.int64),
            pinned=np.array([memory.kind == PINNED for memory in memories], dtype=bool),
            tokens=np.array([estimate_tokens(memory.text) for memory in memories], dtype=np.int64),
        )


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate, 1.3 tokens a word: the same one lorebook budgets use."""
    return math.ceil(len(text.split()) * 1.3)


def scores(arrays: MemoryArrays, query: np.ndarray, now_turn: int, config: RetrievalConfig) -> np.ndarray:
    """Each memory's retrieval score for the query embedding `query` (D,) at turn `now_turn`: (N,)."""
    if len(arrays.turns) == 0:
        return np.zeros(0, dtype=np.float32)
    cosine = arrays.embeddings @ query.astype(np.float32)  # (N,)
    spread = float(cosine.max() - cosine.min())
    relevance = (cosine - cosine.min()) / spread if spread > 1e-6 else np.ones_like(cosine)
    age = np.maximum(now_turn - arrays.turns, 0)  # (N,)
    recency = np.power(np.float32(config.recency_decay), age.astype(np.float32))  # (N,)
    return (
        config.relevance_weight * relevance
        + config.recency_weight * recency
        + config.importance_weight * arrays.importance
    )


def retrieve(arrays: MemoryArrays, query: np.ndarray, now_turn: int, config: RetrievalConfig) -> list[int]:
    """Indices of the memories for the prompt: pinned first, then by score, within budget and limit."""
    scored = scores(arrays, query, now_turn, config)
    # Only the best `limit` can be chosen, so a partial sort is enough even at 10,000 memories.
    count = min(config.limit, len(scored))
    best = np.argpartition(-scored, count - 1)[:count] if count else np.zeros(0, dtype=np.int64)
    order = sorted(best.tolist(), key=lambda index: -scored[index])
    pinned = [int(index) for index in np.flatnonzero(arrays.pinned)]
    chosen: list[int] = []
    spent = 0
    for index in pinned + [index for index in order if not arrays.pinned[index]]:
        if len(chosen) >= config.limit:
            break
        cost = int(arrays.tokens[index])
        if spent + cost > config.token_budget:
            continue  # a long memory that does not fit leaves room for shorter ones
        chosen.append(index)
        spent += cost
    return chosen


# Rules for extraction and importance: what the player says about themselves or the world is worth keeping.
SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# "When I was young I lived in Tarsk" tells what happened; "when" opens a question or a supposition otherwise.
WHEN_ASKING = r"when(?!\s+(?:i|we)\s+(?:was|were|had|used|lived|grew|left)\b)"
QUESTION_START = re.compile(
    rf"^(what|who|where|{WHEN_ASKING}|why|how|which|do|does|did|is|are|was|were|can|could|will|would|should|have|has)\b",
    re.I,
)
# "No dogs allowed in my house" tells something; "No." and "Sure!" do not.
SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|bye|goodbye|good (?:morning|night)\b|"
    r"(?:ok|okay|yes|no|sure)(?=\s*(?:[,.!?]|$)))\b",
    re.I,
)
FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|mine|myself|we|our)\b", re.I)
DISCLOSURE = re.compile(
    r"\b(name|found|lost|saw|live|lived|work|born|family|sister|brother|mother|father|friend|love|hate|fear|afraid|"
    r"need|want|secret|hid|hidden|stole|owe|promise|remember|key|map|letter|ship|killed|buried)\b",
    re.I,
)
# "hi there, I'm Greta from the mill", "No, I live in Tarsk": a greeting, or a yes, no or sorry set off by a
# comma, before what the player tells is not all they said.
LEADING_GREETING = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|greetings|good (?:morning|evening|afternoon|day))\b(?:\s+there\b)?|"
    r"(?:yes|yeah|no|nope|well|oh|sorry)\b(?=\s*[,!.:-]))\s*[,!.:-]*\s*",
    re.I,
)
# "Tell me again.", "Remind me what the bell means": the player asks the character for something, tells nothing.
REQUEST_OF_THE_CHARACTER = re.compile(
    r"^(?:please\s+)?(?:tell|show|give|remind|teach|help|let|ask|say|repeat|read|walk|talk|take|bring|pass|hand)\s+"
    r"(?:me|us|it)\b",
    re.I,
)
SUPPOSITION_OPENINGS = "say|suppose|supposing|imagine|what if"
SUPPOSING = re.compile(rf"^(?:if|{SUPPOSITION_OPENINGS}|{WHEN_ASKING})\b", re.I)
# "Say the chapel had a pipe that wheezed." sets up a question; it tells nothing that is so.
PURE_SUPPOSITION = re.compile(rf"^(?:{SUPPOSITION_OPENINGS}|picture this)\b(?!\s*,)", re.I)
TAG_QUESTION = re.compile(
    r",\s*(?:have|has|did|do|does|can|could|would|will|is|are|was|were|what|where|who|any|you|right|isn't|don't|"
    r"didn't|eh)\b[^,]*\?$",
    re.I,
)
# "my granddad ran a stall here, maybe you knew him?", "I always carry my lucky dice, see?": the player tells
# something and then asks after it; what comes before the last comma is told.
TOLD_THEN_ASKED = re.compile(
    r"^(?P<told>(?:(?:and|also|oh|so|but)\s+)?(?:i|i'm|i've|i'd|my|me)\b.*\S),\s*[^,]*\?$", re.I
)
# The one the player talks to, called by name before what they tell: "Eve, I'm Rosalind." remembers "I'm
# Rosalind.", which a character can say back ("Eve, you're Rosalind" cannot be).
LEADING_VOCATIVE = re.compile(r"^[A-Z][a-z][\w'-]*\s*,\s*(?=(?:I|I'm|I've|I'd|I'll|my|My|we|We|our|Our)\b)")
# Sentences made only of such words tell nothing ("By the way.", "Just so.", "And then there's this.").
EMPTY_WORDS = {
    "a", "an", "the", "and", "or", "but", "so", "by", "way", "of", "to", "in", "on", "at", "for", "with", "just",
    "then", "there", "here", "this", "that", "it", "is", "was", "well", "now", "anyway", "also", "too", "oh", "ah",
    "right", "all", "as", "if", "i", "you", "me", "really", "quite", "very", "indeed", "mean", "guess", "see", "know",
    "s", "t", "there's", "that's", "it's", "i'm", "you're",
}  # fmt: skip
# "Hello there. Branwen.", "Hi! Sam here.": the name a greeting is followed by is the player's own.
GREETING_ONLY = re.compile(
    r"^(?:hi|hello|hey|hiya|greetings|good (?:morning|evening|afternoon|day)|evening|morning)\b(?:\s+there)?\W*$", re.I
)
NAME_AFTER_GREETING = re.compile(r"^(?P<name>[A-Z][a-z][\w'-]*)(?:\s+here)?\s*[.!]*$")
NOT_A_NAME = {
    "sorry", "yes", "no", "please", "welcome", "cheers", "evening", "morning", "afternoon", "hello", "hi", "sure",
    "okay", "ok", "yeah", "thanks", "nope", "well",
}  # fmt: skip
PRONOUN_START = re.compile(r"^(she|he|they|it|his|her|their|its)\b", re.I)
PROPER_NOUN_OR_NUMBER = re.compile(r"(?<!^)(?<![.!?]\s)\b([A-Z][a-z]+|\d+)\b")


def importance_of(text: str) -> float:
    """A rule-based importance in [0, 1]: self-disclosure, named things, numbers and detail raise it."""
    if tells_own_name(text):
        return 1.0  # the player's own name is what a character must never forget
    importance = 0.2
    if FIRST_PERSON.search(text):
        importance += 0.2
    if DISCLOSURE.search(text):
        importance += 0.3
    if PROPER_NOUN_OR_NUMBER.search(text):
        importance += 0.2
    if len(text.split()) >= 8:
        importance += 0.1
    return min(importance, 1.0)


def extract_memories(player_message: str, turn: int) -> list[Memory]:
    """The statements worth remembering in a player's message: declarative sentences of three words or more
    (or the player's name, however short) that are neither questions, small talk nor requests, each kept in the
    player's own words. A sentence that opens
    with a pronoun stays with the sentence before it, so that "She said I should find you" still says who."""
    memories: list[Memory] = []
    previous = ""
    greeted = False
    for match in SENTENCE.finditer(player_message):
        if GREETING_ONLY.match(match.group().strip()):
            greeted = True  # "Hello there." alone: what follows may be the bare name
            continue
        sentence = LEADING_VOCATIVE.sub("", LEADING_GREETING.sub("", match.group().strip()))
        # "If I went missing, where would you send word?" supposes; it tells nothing.
        if not SUPPOSING.match(sentence):
            # "I lost a glove by the stall, have you seen it?" tells something before it asks.
            sentence = TAG_QUESTION.sub(".", sentence)
            if (told_first := TOLD_THEN_ASKED.match(sentence)) and not QUESTION_START.match(sentence):
                sentence = told_first.group("told") + "."
        bare_name = NAME_AFTER_GREETING.match(sentence) if greeted else None
        greeted = False
        if bare_name and bare_name.group("name").lower() not in NOT_A_NAME:
            sentence = f"I'm {bare_name.group('name')}."
        words = sentence.split()
        # "I'm Tamsin." is short, and the one thing a character must not forget.
        too_short = len(words) < 3 and not tells_own_name(sentence)
        empty = not set(re.findall(r"[a-z']+", sentence.lower())) - EMPTY_WORDS
        kept = not (
            too_short
            or empty
            or sentence.endswith("?")
            or QUESTION_START.match(sentence)
            or SMALL_TALK.match(sentence)
            or REQUEST_OF_THE_CHARACTER.match(sentence)
            or PURE_SUPPOSITION.match(sentence)
        )
        if kept and not sentence.endswith((".", "!")):
            sentence += "."
        if kept and previous and PRONOUN_START.match(sentence):
            if memories and memories[-1].text == previous:
                memories.pop()
            sentence = f"{previous} {sentence}"
        if kept:
            memories.append(Memory(text=sentence, importance=importance_of(sentence), turn=turn))
        previous = sentence if kept else ""
    return memories


SECOND_PERSON = {
    "i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "i'm": "you're",
    "i've": "you've", "i'll": "you'll", "i'd": "you'd", "am": "are",
    "your": "my", "yours": "mine", "yourself": "myself", "you're": "I'm", "you've": "I've", "you'll": "I'll",
    "you'd": "I'd",
}  # fmt: skip
# After these, the player's "you" is the character as a subject ("if you help"), elsewhere as an object.
SUBJECT_BEFORE = {"", "and", "but", "that", "if", "when", "because", "so", "said", "think", "thought", "hope"}


def to_second_person(statement: str) -> str:
    """The player's "I found a key" as the character says it back: "You found a key" (and "you" becomes
    "me", or "I" as a subject, since the player's "you" is the character)."""
    words = re.split(r"(\b[\w']+\b)", statement)
    previous = ""
    character_subject = False
    for position, word in enumerate(words):
        if not re.match(r"[\w']", word):
            if re.search(r"[,.;:!?]", word):
                previous = ""  # a new clause: its "you" is a subject
            continue
        lowered = word.lower()
        replacement = SECOND_PERSON.get(lowered)
        if lowered == "am" and previous != "i":
            replacement = None  # only "I am" becomes "you are"
        if lowered == "was" and previous == "i":
            replacement = "were"
        if lowered in ("are", "were") and character_subject:
            replacement = "am" if lowered == "are" else "was"
        character_subject = False
        if lowered == "you":
            character_subject = previous in SUBJECT_BEFORE
            replacement = "I" if character_subject else "me"
        if replacement is not None:
            # "I" and "I'm" are always upper case; only a word capitalised for another reason stays so.
            always_upper = lowered == "i" or lowered.startswith("i'")
            capitalise = word[:1].isupper() and not always_upper
            words[position] = replacement.capitalize() if capitalise and replacement[:1] != "I" else replacement
        previous = lowered
    text = "".join(words)
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class ConsolidationConfig:
    """When and how much to consolidate."""

    # A summary every 20 turns keeps a long relationship's memory list short without losing early facts.
    every_turns: int = 20
    # Sentences a summary keeps: the most important of the period, in the order they were said.
    max_sentences: int = 4


def consolidation_due(turn: int, last_consolidated_turn: int, config: ConsolidationConfig) -> bool:
    """Whether `turn` ends a period that has not been summarised yet."""
    return turn - last_consolidated_turn >= config.every_turns


def consolidate(memories: Sequence[Memory], since_turn: int, turn: int, config: ConsolidationConfig) -> Memory | None:
    """One summary memory of the episodic memories made after `since_turn`, or None when there are none.

    Extractive: the most important statements of the period, in order, in the player's words, so the summary
    is exactly as true as what it summarises. The episodic memories stay; the platform may drop them later.
    """
    period = [memory for memory in memories if memory.kind == EPISODIC and memory.turn > since_turn]
    if not period:
        return None
    kept = sorted(sorted(period, key=lambda memory: -memory.importance)[: config.max_sentences], key=lambda m: m.turn)
    text = " ".join(memory.text for memory in kept)
    return Memory(text=text, importance=max(memory.importance for memory in kept), turn=turn, kind=SUMMARY)
