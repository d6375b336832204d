"""Two choices written live for a story beat: sample several candidate actions, measure every one, keep the
best pair, and fall back to the beat's authored choices when no pair passes.

A 135M model asked for "two choices as a numbered list" writes dates, headings and nonsense (measured: no
passing pair in ten beats). It does far better at completing one sentence: so each candidate is the
continuation of "The player could", after one worked example (a few-shot prompt), stopped at the end of the
sentence; the candidates are sampled as one batch on the local backend. A larger model behind HTTP takes the
same prompt. Every option is then measured:

- an action: 2 to 14 words, not a question, not opening with a pronoun, article or question word, not ending
  on a dangling word ("and", "the"), no role tags or markup, and not the worked example's answer;
- relevance: cosine similarity to the scene and guidance (MiniLM) at least `min_relevance`;
- not a copy of the guidance: cosine to it below `max_guidance_similarity` and fewer than
  `max_guidance_overlap` of its words shared;
- distinct: the two options of a pair below `max_pair_similarity` cosine to each other.

The pair with the highest summed relevance among passing pairs wins, the same rule the evaluation's
choice_pair_pass_rate counts (a fallback is not a pass).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from inference.language.base import GenerationSettings, LanguageModel, Message
from inference.language.embedding import Embedder

NOT_AN_ACTION_START = {
    "i", "you", "he", "she", "it", "we", "they", "the", "a", "an", "this", "that", "what", "who", "where", "when",
    "why", "how", "which", "is", "are", "do", "does", "choice", "option", "player",
}  # fmt: skip
DANGLING_END = {"and", "or", "but", "then", "the", "a", "an", "to", "of", "with", "that", "their", "his", "her", "by"}
LEAD_IN = re.compile(r"^\s*(?:try to|choose to|decide to|also)\s+", re.I)
EXAMPLE_SCENE = "A narrow forest path splits in two beside an old well."
EXAMPLE_GUIDANCE = "The player chooses a way."
EXAMPLE_ANSWER = "take the left path"
REPLY_START = "The player could"


@dataclass(frozen=True)
class ChoiceConfig:
    """How many candidates to sample and what a good option measures."""

    # Candidate actions sampled per beat, as one batch: with SmolLM2 on tests/data/narrative/choices.json, 8
    # gave a passing pair for 8 beats in 10 and 12 for all 10, at about 3.7 s a beat on one CPU thread.
    candidates: int = 12
    min_words: int = 2
    max_words: int = 14
    # MiniLM cosine to the scene and guidance: on-topic actions score 0.3-0.6, generic ones below 0.15.
    min_relevance: float = 0.2
    # Options closer than this say the same thing twice ("Open the door" / "Open the wooden door").
    max_pair_similarity: float = 0.8
    # Above this an option restates the guidance instead of acting on it.
    max_guidance_similarity: float = 0.9
    max_guidance_overlap: float = 0.75
    # Warm enough that the candidates differ; one sentence of at most 14 words fits in 20 tokens.
    settings: GenerationSettings = field(
        default_factory=lambda: GenerationSettings(temperature=0.9, max_new_tokens=20, stop=(".", "!", "\n"))
    )


@dataclass(frozen=True)
class ChoiceResult:
    """The two choices the player sees and where they came from."""

    choices: tuple[str, ...]
    source: str  # "generated" or "authored"
    relevance: tuple[float, ...] = ()


def choice_messages(scene: str, guidance: str) -> list[Message]:
    """The prompt for one candidate action: a worked example, then the beat, the reply seeded with REPLY_START."""
    return [
        {"role": "system", "content": "You suggest what the player of an interactive story could do next: "
                                      "one short action."},
        {"role": "user", "content": question_for(EXAMPLE_SCENE, EXAMPLE_GUIDANCE)},
        {"role": "assistant", "content": f"{REPLY_START} {EXAMPLE_ANSWER}."},
        {"role": "user", "content": question_for(scene, guidance)},
        {"role": "assistant", "content": REPLY_START},
    ]  # fmt: skip


def question_for(scene: str, guidance: str) -> str:
    goal = f"\nGoal: {guidance.strip()}" if guidance.strip() else ""
    return f"Scene: {scene.strip()}{goal}\nWhat could the player do next?"


def option_from(continuation: str) -> str:
    """The action in a continuation of REPLY_START, tidied and capitalised ("" when nothing is left)."""
    option = LEAD_IN.sub("", re.sub(r"[*_`\"]", "", continuation)).strip().rstrip(".,;:!").strip()
    return option[:1].upper() + option[1:]


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def reads_as_action(option: str, config: ChoiceConfig) -> bool:
    words = option.split()
    if not config.min_words <= len(words) <= config.max_words or option.endswith("?"):
        return False
    if "<" in option or ":" in option or not words[0][:1].isalpha():
        return False
    if option.lower() == EXAMPLE_ANSWER or words[-1].lower().strip(",.") in DANGLING_END:
        return False
    return words[0].lower().strip(",.") not in NOT_AN_ACTION_START


def copies_guidance(option: str, guidance: str, similarity: float, config: ChoiceConfig) -> bool:
    option_words = set(words_of(option))
    guidance_words = set(words_of(guidance))
    overlap = len(option_words & guidance_words) / max(len(option_words), 1)
    return similarity >= config.max_guidance_similarity or (
        bool(guidance_words) and overlap >= config.max_guidance_overlap
    )


def best_pair(
    options: Sequence[str], scene: str, guidance: str, embedder: Embedder, config: ChoiceConfig
) -> tuple[tuple[str, str], tuple[float, float]] | None:
    """The passing pair of `options` with the highest summed relevance, with those relevances; None if none."""
    unique = list(dict.fromkeys(option for option in options if reads_as_action(option, config)))
    if len(unique) < 2:
        return None
    vectors = embedder.embed([*unique, f"{scene} {guidance}".strip(), guidance or scene])  # (U + 2, D)
    option_vectors, context, guidance_vector = vectors[:-2], vectors[-2], vectors[-1]
    relevance = option_vectors @ context  # (U,)
    guidance_similarity = option_vectors @ guidance_vector  # (U,)
    good = [
        index
        for index, option in enumerate(unique)
        if relevance[index] >= config.min_relevance
        and not (guidance and copies_guidance(option, guidance, float(guidance_similarity[index]), config))
    ]
    pair_similarity = option_vectors @ option_vectors.T  # (U, U)
    best: tuple[float, int, int] | None = None
    for first, second in itertools.combinations(good, 2):
        if pair_similarity[first, second] >= config.max_pair_similarity:
            continue
        total = float(relevance[first] + relevance[second])
        if best is None or total > best[0]:
            best = (total, first, second)
    if best is None:
        return None
    _, first, second = best
    return (unique[first], unique[second]), (float(relevance[first]), float(relevance[second]))


def sample_candidates(
    model: LanguageModel, messages: list[Message], settings: GenerationSettings, count: int
) -> list[str]:
    """`count` sampled replies: one batch where the backend offers it, otherwise one request per seed."""
    batched = getattr(model, "candidates", None)
    if callable(batched):
        return batched(messages, settings, count)
    base_seed = settings.seed if settings.seed is not None else int(np.random.default_rng().integers(1 << 31))
    return [
        "".join(model.stream(messages, dataclasses.replace(settings, seed=base_seed + offset)))
        for offset in range(count)
    ]


def generate_choices(
    model: LanguageModel,
    embedder: Embedder,
    *,
    scene: str,
    guidance: str,
    authored: Sequence[str],
    config: ChoiceConfig | None = None,
    seed: int | None = None,
) -> ChoiceResult:
    """Two generated choices for a beat, or its authored choices when no generated pair passes."""
    config = config or ChoiceConfig()
    settings = dataclasses.replace(config.settings, seed=seed)
    replies = sample_candidates(model, choice_messages(scene, guidance), settings, config.candidates)
    options = [option for reply in replies if (option := option_from(reply))]
    found = best_pair(options, scene, guidance, embedder, config)
    if found is None:
        return ChoiceResult(choices=tuple(authored), source="authored")
    pair, relevance = found
    return ChoiceResult(choices=pair, source="generated", relevance=relevance)
