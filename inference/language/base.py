"""The one interface every language model backend speaks: chat messages in, cleaned text out, streamed.

The shape follows the OpenAI chat completions API (a list of `{"role", "content"}` messages), which vLLM,
llama.cpp's server, Ollama and `transformers serve` all accept, so that prompts built once work with the small
local model and with a larger one behind HTTP unchanged. A last message with the role "assistant" is a reply
prefix: the backend continues it (vLLM's `continue_final_message`), and the stream yields only the
continuation. The narrative engine grounds replies this way (see inference/narrative/prompting.py).
"""

from __future__ import annotations

import re
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
    # Characters speak in a few sentences; short replies are also what keeps a small model coherent.
    max_new_tokens: int = 80
    # Extra sequences that end the reply (the role-tag stops in ROLE_STOPS always apply).
    stop: tuple[str, ...] = ()
    # None samples freshly each time; a number makes a local reply repeatable (tests, evaluations).
    seed: int | None = None
    # Nucleus sampling cuts the long tail of unlikely tokens where small models find nonsense.
    top_p: float = 0.9
    # A mild penalty stops SmolLM2's tendency to loop on one phrase; 1.0 turns it off.
    repetition_penalty: float = 1.1


class LanguageModel(Protocol):
    """A chat model that streams the text of its reply, already cleaned of role tags and cut at stops."""

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]: ...


def leading_label(speaker: str | None) -> re.Pattern[str]:
    """A label a model sometimes writes at the very start of its own turn ("assistant\\n", "Eve: ")."""
    names = ["assistant", "Assistant", "model", *([re.escape(speaker)] if speaker else [])]
    return re.compile(rf"^\s*(?:<\|[^|>]*\|>\s*)*(?:{'|'.join(names)})\s*[:\n]\s*")


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
    pieces: Iterable[str], settings: GenerationSettings, *, continuation: bool = False, speaker: str | None = None
) -> Iterator[str]:
    """`pieces` of raw model text, cleaned and cut at the first stop; stops consuming once a stop is found."""
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
