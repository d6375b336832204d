"""The one interface every language model backend speaks: chat messages in, cleaned text out, streamed.

The shape follows the OpenAI chat completions API (a list of `{"role", "content"}` messages), which vLLM,
llama.cpp's server, Ollama and `transformers serve` all accept, so that prompts built once work with the small
local model and with a larger one behind HTTP unchanged. A last message with the role "assistant" is a reply
prefix: the backend continues it (vLLM's `continue_final_message`), and the stream yields only the
continuation. The narrative engine grounds replies this way (see inference/narrative/prompting.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, TypedDict


class Message(TypedDict):
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class GenerationSettings:
    """How one reply is sampled; characters carry their own temperature and length."""

    # Low enough that a 135M model stays on topic, high enough that two replies to the same line differ.
    temperature: float = 0.7
    # Room for three sentences of a character's reply (about 25 tokens each); max_sentences ends it sooner.
    max_new_tokens: int = 90
    # Extra sequences that end the reply (the role-tag stops in ROLE_STOPS always apply).
    stop: tuple[str, ...] = ()
    # None samples freshly each time; a number makes a local reply repeatable (tests, evaluations).
    seed: int | None = None
    # Nucleus sampling cuts the long tail of unlikely tokens where small models find nonsense.
    top_p: float = 0.9
    # A mild penalty stops SmolLM2's tendency to loop on one phrase; 1.0 turns it off.
    repetition_penalty: float = 1.1
    # The reply ends with its Nth whole sentence, and a reply that runs out of tokens mid-sentence is cut back
    # to its last whole one: a small model drifts into nonsense the longer it talks, and a cut-off sentence
    # reads as a fault. Characters speak in three; None streams whatever the model writes.
    max_sentences: int | None = 3
    # Tokens that write letters of another script are never sampled ("latin": the worlds are written in
    # English): SmolLM2 drifts into Hebrew and Chinese mid-reply. A local-backend option; a server ignores it.
    script: str | None = "latin"


class LanguageModel(Protocol):
    """A chat model that streams the text of its reply, already cleaned of role tags and cut at stops."""

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]: ...


def leading_label(speaker: str | None) -> re.Pattern[str]:
    """A label a model sometimes writes at the very start of its own turn ("assistant\\n", "Eve: ")."""
    names = ["assistant", "Assistant", "model", *([re.escape(speaker)] if speaker else [])]
    return re.compile(rf"^\s*(?:<\|[^|>]*\|>\s*)*(?:{'|'.join(names)})\s*[:\n]\s*")


@dataclass
class DecodingOutcome:
    """How a backend's raw text ended, told to the sentence limit once the text has run out."""

    ran_out: bool = False  # the token budget (max_new_tokens) ended it, not the model's own end of turn


def complete(model: LanguageModel, messages: list[Message], settings: GenerationSettings) -> str:
    """The whole reply at once."""
    return "".join(model.stream(messages, settings))


# Chat-template markers of the common families (ChatML, Llama 3, Gemma, Mistral) and plain-text turn labels:
# a model that writes one of these is starting a turn that is not its own, so the reply ends there.
ROLE_STOPS = (
    "<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|eot_id|>", "<|start_header_id|>", "<end_of_turn>",
    "<start_of_turn>", "</s>", "[INST]", "\nuser:", "\nUser:", "\nPlayer:", "\nsystem:", "\nSystem:",
)  # fmt: skip
SPECIAL_TOKEN = re.compile(r"<\|[^|>]{1,40}\|>")


@dataclass
class ReplyCleaner:
    """Cleans streamed text as it arrives: drops a leading role label and special tokens, stops at a stop.

    Text that might be the beginning of a stop sequence is held back until the next piece decides it, so a
    stop split across two tokens ("\\nUs" + "er:") never leaks to the player.
    """

    stops: tuple[str, ...] = ROLE_STOPS
    speaker: str | None = None  # a character's name, also dropped when the reply opens with "Name:"
    # A continuation of a reply prefix starts mid-sentence: no label to drop, and its leading space matters.
    continuation: bool = False
    finished: bool = False
    _pending: str = ""
    _started: bool = False
    _leading: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self._leading = leading_label(self.speaker)
        self._started = self.continuation

    def feed(self, piece: str) -> str:
        """The text that is safe to show after adding `piece`; sets `finished` once a stop is reached."""
        if self.finished:
            return ""
        self._pending += piece
        if not self._started:
            # Wait for enough text to tell a leading label from the reply itself.
            if len(self._pending.lstrip()) < 16 and "\n" not in self._pending.lstrip():
                return ""
            self._strip_leading()
        return self._release(final=False)

    def close(self) -> str:
        """The text still held back once the model has stopped."""
        if self.finished:
            return ""
        if not self._started:
            self._strip_leading()
        out = self._release(final=True)
        self.finished = True
        return out

    def _strip_leading(self) -> None:
        self._pending = self._leading.sub("", self._pending, count=1)
        self._started = True

    def _release(self, *, final: bool) -> str:
        cut = min((index for stop in self.stops if (index := self._pending.find(stop)) >= 0), default=-1)
        if cut >= 0:
            out, self._pending, self.finished = self._pending[:cut].rstrip(), "", True
            return SPECIAL_TOKEN.sub("", out)
        if final:
            out, self._pending = self._pending.rstrip(), ""
            return SPECIAL_TOKEN.sub("", out)
        # Hold back the longest tail that is a prefix of some stop (or of a special token being written).
        hold = 0
        for stop in (*self.stops, "<|"):
            for length in range(min(len(stop), len(self._pending)), 0, -1):
                if self._pending.endswith(stop[:length]):
                    hold = max(hold, length)
                    break
        if "<|" in self._pending[-42:] and "|>" not in self._pending[self._pending.rfind("<|") :]:
            hold = max(hold, len(self._pending) - self._pending.rfind("<|"))
        out, self._pending = self._pending[: len(self._pending) - hold], self._pending[len(self._pending) - hold :]
        return SPECIAL_TOKEN.sub("", out)


def cleaned(
    pieces: Iterable[str],
    settings: GenerationSettings,
    *,
    continuation: bool = False,
    speaker: str | None = None,
    outcome: DecodingOutcome | None = None,
) -> Iterator[str]:
    """`pieces` of raw model text, cleaned, cut at the first stop and after `settings.max_sentences` sentences;
    stops consuming once either is reached. `outcome` tells whether the raw text ran out of tokens."""
    text = cleaned_text(pieces, settings, continuation=continuation, speaker=speaker)
    if settings.max_sentences is None:
        return text
    return sentence_limited(text, settings.max_sentences, outcome)


def cleaned_text(
    pieces: Iterable[str], settings: GenerationSettings, *, continuation: bool, speaker: str | None
) -> Iterator[str]:
    cleaner = ReplyCleaner(stops=ROLE_STOPS + tuple(settings.stop), speaker=speaker, continuation=continuation)
    for piece in pieces:
        out = cleaner.feed(piece)
        if out:
            yield out
        if cleaner.finished:
            return
    tail = cleaner.close()
    if tail:
        yield tail


# A sentence ends at ., !, ? or … (a run of them, then closing quotes or brackets) followed by white space; at
# the very end of a reply the white space is not needed. "Mr. Hale" counts as two sentences: rare in speech,
# and only costs a shorter reply.
CLOSING = "\"'\u201d\u2019)\\]"  # quotes (straight and curly) and brackets that close a sentence
SENTENCE_END = re.compile(rf"[.!?…]+[{CLOSING}]*(?=\s)")
SENTENCE_END_AT_END = re.compile(rf"[.!?…]+[{CLOSING}]*\s*$")


def sentence_limited(
    pieces: Iterable[str], max_sentences: int, outcome: DecodingOutcome | None = None
) -> Iterator[str]:
    """`pieces` up to the end of the `max_sentences`th whole sentence; stops consuming there.

    Text after the last sentence end is held back until the next sentence end releases it. When the pieces
    run out, the held text is released if the model ended its turn itself, and dropped if `outcome` says the
    token budget ran out mid-sentence, unless there is no whole sentence before it (some text beats none).
    """
    released = 0  # characters of `text` already yielded
    sentences = 0
    text = ""
    for piece in pieces:
        text += piece
        for end in SENTENCE_END.finditer(text, released):
            yield text[released : end.end()]
            released = end.end()
            sentences += 1
            if sentences >= max_sentences:
                return
    tail = text[released:]
    if not tail:
        return
    unfinished = outcome is not None and outcome.ran_out and not SENTENCE_END_AT_END.search(tail)
    if not unfinished or sentences == 0:
        yield tail.rstrip() if unfinished else tail


# Script blocks that name their characters without the script's name in each letter.
FOREIGN_NAME_PREFIXES = ("CJK", "IDEOGRAPHIC", "FULLWIDTH", "HALFWIDTH")


def foreign_script(text: str, script: str = "latin") -> bool:
    """Whether `text` writes a letter, mark or digit of a script other than `script` (only "latin" is known).

    Punctuation, symbols, white space, ASCII digits and Latin letters with diacritics are all in; a control
    character (other than white space) is out, and so is a Cyrillic,
    Greek, Hebrew, Arabic, Devanagari or Han character is out. U+FFFD, a byte of a character that a
    byte-level token writes only in part, is out too: its other bytes could complete any script's letter.
    """
    if script != "latin":
        raise ValueError(f"unknown script {script!r}: only 'latin' is known")
    for character in text:
        if character.isascii():
            if not (character.isprintable() or character.isspace()):
                return True  # a control character: noise, in any script
            continue
        if character == "\ufffd":
            return True
        name = unicodedata.name(character, "")
        if name.startswith(FOREIGN_NAME_PREFIXES):
            return True
        category = unicodedata.category(character)
        if category.startswith("L") and not name.startswith("LATIN"):
            return True
        if category.startswith("M") and not name.startswith("COMBINING"):
            return True  # the vowel signs and points of other scripts; generic combining accents stay
        if category == "Nd":
            return True  # Arabic-Indic, Devanagari … digits
    return False
