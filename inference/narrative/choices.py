"""Two choices written live for a story beat: sample several candidate lists, measure every option, keep the
best pair, and fall back to the beat's authored choices when no pair passes.

A 135M model asked for two choices often writes nonsense, so nothing it writes is trusted unmeasured. The
model is prompted with the scene and the beat's guidance and its reply is seeded with "1." so it writes a
numbered list; several candidates are sampled (as one batch on the local backend), and every option from
every candidate is measured:

- length: an action of 2 to 14 words, reading as an action (not a question, not opening with a pronoun,
  article or question word, no role tags or markup left);
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
NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*(.+?)\s*$")


@dataclass(frozen=True)
class ChoiceConfig:
    """How many candidates to sample and what a good option measures."""

    # Candidate lists sampled per beat: four batched rows cost little more than one on a CPU.
    candidates: int = 4
    min_words: int = 2
    max_words: int = 14
    # MiniLM cosine to the scene and guidance: on-topic actions score 0.3-0.6, generic ones below 0.15.
    min_relevance: float = 0.2
    # Options closer than this say the same thing twice ("Open the door" / "Open the wooden door").
    max_pair_similarity: float = 0.8
    # Above this an option restates the guidance instead of acting on it.
    max_guidance_similarity: float = 0.9
    max_guidance_overlap: float = 0.75
    # Warm enough that the candidates differ; short, since two actions need about thirty tokens.
    settings: GenerationSettings = field(
        default_factory=lambda: GenerationSettings(temperature=0.8, max_new_tokens=40, stop=("\n3", "\n\n"))
    )


@dataclass(frozen=True)
class ChoiceResult:
    """The two choices the player sees and where they came from."""

    choices: tuple[str, ...]
    source: str  # "generated" or "authored"
    relevance: tuple[float, ...] = ()


def choice_messages(scene: str, guidance: str) -> list[Message]:
    """The prompt for a numbered list of two actions, seeded with "1."."""
    direction = f"\nWhat should happen: {guidance.strip()}" if guidance.strip() else ""
    return [
        {"role": "system", "content": "You write choices for an interactive story. Each choice is a short action "
                                      "the player can take, starting with a verb."},
        {"role": "user", "content": f"Scene: {scene.strip()}{direction}\nWrite two different actions the player "
                                    "could take next, as a numbered list."},
        {"role": "assistant", "content": "1."},
    ]  # fmt: skip


def parse_options(text: str) -> list[str]:
    """The options of a numbered or bulleted list, tidied; the reply's seeded "1." included."""
    options = []
    for line in ("1." + text).splitlines():
        found = NUMBERED.match(line)
        if not found:
            continue
        option = re.sub(r"[*_`\"]", "", found.group(1)).strip().rstrip(".!;:,").strip()
        if option:
            options.append(option[:1].upper() + option[1:])
    return options


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def reads_as_action(option: str, config: ChoiceConfig) -> bool:
    words = option.split()
    if not config.min_words <= len(words) <= config.max_words or option.endswith("?"):
        return False
    if "<" in option or ":" in option or not words[0][:1].isalpha():
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
    options = [option for reply in replies for option in parse_options(reply)]
    found = best_pair(options, scene, guidance, embedder, config)
    if found is None:
        return ChoiceResult(choices=tuple(authored), source="authored")
    pair, relevance = found
    return ChoiceResult(choices=pair, source="generated", relevance=relevance)
