"""Which authored branch of a hook a player's free input means: nearest intent by sentence embedding.

Each branch is represented by its intent and its examples, embedded once (all-MiniLM-L6-v2 by default). All
of a hook's texts share its topic (the guard, the letter), and raw cosines reward that shared topic: "I
reason with the guard" is close to "I punch the guard". So the hook's mean embedding is subtracted from
every text and from the input before comparing (centering, as in Mu and Viswanath, "All-but-the-Top", 2018),
which leaves what tells the branches apart. A player's input then scores, for each branch, its highest
centered cosine to any of that branch's texts (a one-nearest-neighbour rule: no training, and every example
a creator writes counts).

A branch is an outcome, often one that ends the story, so the classifier refuses one unless the input
really means it; a refused input is None and the caller asks the model for an outcome in the hook's spirit
(`fallback_messages`). The least bad branch is not enough:
- a question put to the figure ("who are you?", "is the water cold?") asks, it does not act; a question that
  proposes ("would silver change your mind?", "what if I pay you?") is read like any other input;
- the best branch must be close to one of its own texts, on the raw cosine (`threshold`: the input is about
  this branch) and on the centered one (`centered_threshold`: about what sets it apart, not just the topic);
- courtesy, gestures and small talk (`SMALL_TALK`) are a class of their own that competes with the branches:
  when the input is nearer to one of those than to every branch text by `small_talk_margin`, it means no
  branch. The comparison leaves out each vector's part along the hook's topic, which every input about the
  figure shares ("I nod to the guard" is otherwise nearer to "I punch the guard" than to "I nod").
A branch that passes these but whose lead over the next is under `tie_margin` is a tie a language model, if
given, breaks. A local model scores how likely each branch's intent is as what the player means ("…the
player wants to <intent>"), less how likely it is with no input at all (contextual calibration, Zhao et al.,
"Calibrate Before Use", 2021), and that likelihood is added to every branch's score with
`likelihood_weight`: MiniLM does not know that "I bribe him" is about money, SmolLM2 does. A model behind
HTTP, which gives no likelihoods, is asked to name the branch by letter instead. Every decision carries the
per-branch scores for the studio's playtest.
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


# Courtesy, gestures and small talk: what a player says to a figure that chooses none of its outcomes. Generic on
# purpose, so they fit any hook; a hook whose branch is one of these (bow to the queen) wins on its own texts.
SMALL_TALK: tuple[str, ...] = (
    "hello", "good morning to you", "thanks a lot", "I nod in greeting", "I wave hello",
    "I bow in respect", "I smile warmly", "I laugh", "I hum a melody", "I dance a little jig",
    "lovely day, isn't it", "how are you doing", "what's your story", "where do you come from",
    "tell me about yourself", "my name is Sam", "I introduce myself",
    # Looking, waiting and passing remarks: what a player does beside a figure without choosing anything.
    "I look around for a while", "I take in the view", "I stand still and listen", "I rest for a moment",
    "I wait and see what happens", "nice hat you've got", "what a lovely evening",
    "tell me about this place", "I ask about the area", "I think it over", "I stretch my legs",
    # Seeing to oneself beside the figure: a snack, a look through one's pack, tidying up.
    "I sit down and eat a snack", "I check my pack", "I brush the dust off my clothes", "I make a cup of tea",
)  # fmt: skip
# A question that asks rather than proposes: a question word or a be/do/have verb first. "would", "could",
# "can", "will" and "shall" stay out: "would a pouch of silver change your mind?" is an offer.
ASKING = re.compile(
    r"^\s*(?:(?:who|whom|whose|what|which|where|when|why|how)(?!\s+(?:much|many|about|if|else)\b)"
    r"|(?:is|are|am|was|were|do|does|did|have|has|had|isn't|aren't|don't|doesn't|didn't)\b(?!\s+not\b))",
    re.IGNORECASE,
)
PROPOSING = re.compile(
    r"^\s*what\s+(?:if|about)\b|^\s*why\s+(?:don't|not)\b|^\s*how\s+(?:much|many)\s+(?:to|for)\b", re.IGNORECASE
)
# Before what the player says: an interjection or the name of whom they speak to ("so, who…", "Eve, do you…").
OPENING = re.compile(r"^\s*(?:(?:so|ok|okay|well|hey|um|uh|and|but|right|oh)\b[,!]?\s*|[A-Z][a-z]+,\s+)+")
# Words asked for, not a deed: "tell me about the river", "I ask him where the captain is", "I wonder why".
ASKING_FOR_WORDS = re.compile(
    r"^\s*(?:please\s+)?(?:tell|show)\s+me\b(?!\s+(?:through|in|inside|across|over|the way))|"
    r"^\s*(?:describe|explain)\b|"
    r"^\s*i\s+(?:wonder|ask|asks|enquire|inquire|want to know|would like to know|'d like to know)\b"
    r"(?:\s+(?:him|her|them|you|the\s+\w+|a\s+\w+|an\s+\w+|\w+))?\s+"
    r"(?:about|where|what|who|whom|why|how|when|if|whether|which)\b|^\s*i\s+wonder\b",
    re.IGNORECASE,
)
# A question put as a statement ("you been here long?") asks, unless the player proposes a deed in it:
# "would", "could", "can", "will", "shall" open an offer ("would a pouch of silver change your mind?"),
# except when they ask the figure to say or hear something ("can you tell me…", "can you hear me?").
OFFER_OPENING = re.compile(r"^\s*(?:would|could|can|will|shall|may|might)\b", re.IGNORECASE)
WORDS_OPENING = re.compile(
    r"^\s*(?:can|could|will|would)\s+you\s+(?:please\s+)?(?:tell|show|explain|hear|see|say|describe|remind)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class BranchConfig:
    """When a match is confident enough."""

    # Raw MiniLM cosine of the input to the best branch's nearest text: inputs that mean a branch score 0.35-0.85,
    # unrelated chat under 0.25 (tests/data/narrative/hooks.json).
    threshold: float = 0.3
    # Centered cosine to the best branch's nearest text: what sets the branch apart must be in the input too.
    centered_threshold: float = 0.12
    # How much nearer (cosine, topic left out) to a SMALL_TALK text than to every branch text means no branch.
    small_talk_margin: float = 0.05
    # Centered scores closer than this are a tie the model is asked to break, when one is given.
    tie_margin: float = 0.1
    # The weight of the model's calibrated log-likelihood (nats per token) beside the centered cosine.
    likelihood_weight: float = 0.1


@dataclass(frozen=True)
class BranchDecision:
    """The branch chosen (None: fall back to the model), how, and every branch's score."""

    branch: str | None
    scores: dict[str, float]
    # "similarity", "model" (a tie broken), or why no branch: "question" (asked, not done), "threshold" (no branch
    # text close enough) or "small talk" (nearer to courtesy and chat than to any branch)
    decided_by: str


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
        self.topic_direction = unit_rows(self.topic[None, :])[0]  # (D,)
        self.off_topic = self.without_topic(self.embeddings)  # (K, D)
        self.small_talk = self.without_topic(embedder.embed(list(SMALL_TALK)))  # (S, D)

    def classify(self, player_input: str) -> BranchDecision:
        query = self.embedder.embed([player_input])[0]  # (D,)
        raw = self.embeddings @ query  # (K,)
        similarities = self.centered @ unit_rows((query - self.topic)[None, :])[0]  # (K,)
        per_branch = np.full(len(self.branches), -1.0, dtype=np.float32)  # (B,)
        np.maximum.at(per_branch, self.owners, similarities)
        scores = {branch.name: round(float(score), 4) for branch, score in zip(self.branches, per_branch, strict=True)}
        ranked = np.argsort(-per_branch)
        best = int(ranked[0])
        refusal = self.refusal(player_input, query, raw, similarities, best)
        if refusal is not None:
            return BranchDecision(branch=None, scores=scores, decided_by=refusal)
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

    def refusal(
        self, player_input: str, query: np.ndarray, raw: np.ndarray, centered: np.ndarray, best: int
    ) -> str | None:
        """Why the input means no branch (a BranchDecision.decided_by), or None when the best branch stands."""
        if asks(player_input):
            return "question"
        own = self.owners == best  # (K,): the best branch's texts
        if raw[own].max() < self.config.threshold or centered[own].max() < self.config.centered_threshold:
            return "threshold"
        remainder = self.without_topic(query[None, :])[0]  # (D,)
        if (self.small_talk @ remainder).max() > (self.off_topic @ remainder).max() + self.config.small_talk_margin:
            return "small talk"
        return None

    def without_topic(self, vectors: np.ndarray) -> np.ndarray:
        """`vectors` (N, D) less their part along the hook's topic, scaled to length 1: (N, D)."""
        return unit_rows(vectors - np.outer(vectors @ self.topic_direction, self.topic_direction))

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


def asks(player_input: str) -> bool:
    """Whether the input is a question that asks (about the figure, the place) rather than one that proposes,
    or a request to be told something."""
    text = OPENING.sub("", player_input.replace("\u2019", "'").strip())
    if PROPOSING.search(text):
        return False
    if ASKING.search(text) or ASKING_FOR_WORDS.search(text) or WORDS_OPENING.search(text):
        return True
    return text.endswith("?") and not OFFER_OPENING.search(text) and not re.search(r"\bi\b", text, re.I)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` (N, D) scaled to length 1 (a zero row stays zero)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def model_tie_break(model: LanguageModel, player_input: str, tied: Sequence[Branch]) -> Branch | None:
    """The branch the model picks by letter, or None when its answer names none of them."""
    letters = "ABCDEFGH"[: len(tied)]
    options = "\n".join(f"{letter}) {branch.intent}" for letter, branch in zip(letters, tied, strict=True))
    messages: list[Message] = [
        {
            "role": "user",
            "content": f'The player says: "{player_input}"\nWhich intent matches best?\n{options}\n'
            f"Answer with one letter.",
        },
        {"role": "assistant", "content": "The answer is"},
    ]
    answer = complete(model, messages, GenerationSettings(temperature=0.0, max_new_tokens=4))
    found = re.search(rf"\b([{letters}])\b", answer)
    return tied[letters.index(found.group(1))] if found else None


def fallback_messages(*, presentation: str, guidance: str, player_input: str) -> list[Message]:
    """A prompt for an outcome in the hook's spirit when no branch matches the player's input."""
    direction = f" {guidance.strip()}" if guidance.strip() else ""
    return [
        {
            "role": "system",
            "content": "You narrate an interactive story in the second person. Reply in one or two "
            f"short sentences that say what happens next.{direction}",
        },
        {"role": "user", "content": f"{presentation.strip()}\nThe player: {player_input.strip()}"},
    ]
