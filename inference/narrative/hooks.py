"""Which authored branch of a hook a player's free input means: nearest intent by sentence embedding.

Each branch is represented by its intent and its examples, embedded once (all-MiniLM-L6-v2 by default). All
of a hook's texts share its topic (the guard, the letter), and raw cosines reward that shared topic: "I
reason with the guard" is close to "I punch the guard". So the hook's mean embedding is subtracted from
every text and from the input before comparing (centering, as in Mu and Viswanath, "All-but-the-Top", 2018),
which leaves what tells the branches apart; on the evaluation's paraphrases this lifts accuracy from 0.75
to 0.83. A player's input then scores, for each branch, its highest centered cosine to any of that branch's
texts (a one-nearest-neighbour rule: no training, and every example a creator writes counts).

Whether the input is about the hook at all is judged on the raw cosine: below `threshold` to every text, the
decision is None and the caller asks the model for an outcome in the hook's spirit (`fallback_messages`).
When the two best branches are within `tie_margin`, a language model, if given, breaks the tie. A local model
scores how likely each branch's intent is as what the player means ("…the player wants to <intent>"), less
how likely it is with no input at all (contextual calibration, Zhao et al., "Calibrate Before Use", 2021),
and that likelihood is added to every branch's score with `likelihood_weight`: MiniLM does not know that
"I bribe him" is about money, SmolLM2 does. On the evaluation's paraphrases this lifts accuracy from 0.83 to
0.88. A model behind HTTP, which gives no likelihoods, is asked to name the branch by letter instead. Every
decision carries the per-branch scores for the studio's playtest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from inference.language.base import GenerationSettings, LanguageModel, Message, complete
from inference.language.embedding import Embedder


@dataclass(frozen=True)
class Branch:
    """One authored outcome: its name, the intent it stands for, and inputs that mean it."""

    name: str
    intent: str
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class BranchConfig:
    """When a match is confident enough."""

    # Raw MiniLM cosine to the nearest branch text: inputs about the hook score 0.35-0.85, unrelated chat
    # under 0.25 (tests/data/narrative/hooks.json).
    threshold: float = 0.3
    # Centered scores closer than this are a tie the model is asked to break, when one is given.
    tie_margin: float = 0.1
    # The weight of the model's calibrated log-likelihood (nats per token) beside the centered cosine.
    likelihood_weight: float = 0.2


@dataclass(frozen=True)
class BranchDecision:
    """The branch chosen (None: fall back to the model), how, and every branch's score."""

    branch: str | None
    scores: dict[str, float]
    decided_by: str  # "similarity", "model" (a tie broken) or "threshold" (nothing close enough)


class BranchClassifier:
    """Classifies inputs into a hook's branches; embeds the branches once."""

    def __init__(
        self,
        branches: Sequence[Branch],
        embedder: Embedder,
        config: BranchConfig | None = None,
        language_model: LanguageModel | None = None,
        presentation: str = "",
    ) -> None:
        if not branches:
            raise ValueError("a hook needs at least one branch")
        self.branches = list(branches)
        self.embedder = embedder
        self.config = config or BranchConfig()
        self.language_model = language_model
        self.presentation = presentation.strip()
        self._likelihood_baseline: np.ndarray | None = None
        texts: list[str] = []
        owners: list[int] = []
        for index, branch in enumerate(self.branches):
            for text in (branch.intent, *branch.examples):
                texts.append(text)
                owners.append(index)
        self.embeddings = embedder.embed(texts)  # (K, D): every intent and example
        self.topic = self.embeddings.mean(axis=0)  # (D,): what all of the hook's texts share
        self.centered = unit_rows(self.embeddings - self.topic)  # (K, D)
        self.owners = np.array(owners)  # (K,): the branch each row belongs to

    def classify(self, player_input: str) -> BranchDecision:
        query = self.embedder.embed([player_input])[0]  # (D,)
        about_the_hook = float((self.embeddings @ query).max())
        similarities = self.centered @ unit_rows((query - self.topic)[None, :])[0]  # (K,)
        per_branch = np.full(len(self.branches), -1.0, dtype=np.float32)  # (B,)
        np.maximum.at(per_branch, self.owners, similarities)
        scores = {branch.name: round(float(score), 4) for branch, score in zip(self.branches, per_branch, strict=True)}
        ranked = np.argsort(-per_branch)
        best = int(ranked[0])
        if about_the_hook < self.config.threshold:
            return BranchDecision(branch=None, scores=scores, decided_by="threshold")
        if (
            self.language_model is not None
            and len(ranked) > 1
            and per_branch[best] - per_branch[int(ranked[1])] < self.config.tie_margin
        ):
            scorer = getattr(self.language_model, "continuation_logprob", None)
            if callable(scorer):
                combined = per_branch + self.config.likelihood_weight * self.likelihoods(scorer, player_input)  # (B,)
                return BranchDecision(
                    branch=self.branches[int(combined.argmax())].name, scores=scores, decided_by="model"
                )
            tied = [self.branches[int(index)] for index in ranked[:2]]
            chosen = model_tie_break(self.language_model, player_input, tied)
            if chosen is not None:
                return BranchDecision(branch=chosen.name, scores=scores, decided_by="model")
        return BranchDecision(branch=self.branches[best].name, scores=scores, decided_by="similarity")

    def likelihoods(self, scorer: Callable[[str, str], float], player_input: str) -> np.ndarray:
        """Each branch's intent as the model's reading of the input, calibrated by its reading of no input: (B,)."""
        if self._likelihood_baseline is None:
            self._likelihood_baseline = np.array(
                [scorer(self.reading("..."), branch.intent) for branch in self.branches], dtype=np.float32
            )
        given = np.array([scorer(self.reading(player_input), branch.intent) for branch in self.branches])
        return given.astype(np.float32) - self._likelihood_baseline

    def reading(self, player_input: str) -> str:
        scene = f"{self.presentation} " if self.presentation else ""
        return f'{scene}The player says: "{player_input.strip()}". In other words, the player wants to'


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` (N, D) scaled to length 1 (a zero row stays zero)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def model_tie_break(model: LanguageModel, player_input: str, tied: Sequence[Branch]) -> Branch | None:
    """The branch the model picks by letter, or None when its answer names none of them."""
    letters = "ABCDEFGH"[: len(tied)]
    options = "\n".join(f"{letter}) {branch.intent}" for letter, branch in zip(letters, tied, strict=True))
    messages: list[Message] = [
        {"role": "user", "content": f'The player says: "{player_input}"\nWhich intent matches best?\n{options}\n'
                                    f"Answer with one letter."},
        {"role": "assistant", "content": "The answer is"},
    ]  # fmt: skip
    answer = complete(model, messages, GenerationSettings(temperature=0.0, max_new_tokens=4))
    found = re.search(rf"\b([{letters}])\b", answer)
    return tied[letters.index(found.group(1))] if found else None


def fallback_messages(*, presentation: str, guidance: str, player_input: str) -> list[Message]:
    """A prompt for an outcome in the hook's spirit when no branch matches the player's input."""
    direction = f" {guidance.strip()}" if guidance.strip() else ""
    return [
        {"role": "system", "content": "You narrate an interactive story in the second person. Reply in one or two "
                                      f"short sentences that say what happens next.{direction}"},
        {"role": "user", "content": f"{presentation.strip()}\nThe player: {player_input.strip()}"},
    ]  # fmt: skip
