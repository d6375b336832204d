"""The local backend on a tiny random model (fast) and on the real SmolLM2 from the GGUF (slow, one test)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.language.base import GenerationSettings, Message, complete
from inference.language.local import (
    PROMPTS_KEPT,
    LocalLanguageModel,
    LocalModelConfig,
    converted_gguf,
    default_gguf_path,
    shared_start,
)
from inference.language.tiny import write_tiny_model

CHAT: list[Message] = [
    {"role": "system", "content": "You are Eve, the harbourmaster."},
    {"role": "user", "content": "Hello, who are you?"},
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> LocalLanguageModel:
    directory = write_tiny_model(tmp_path_factory.mktemp("tiny"))
    return LocalLanguageModel(LocalModelConfig(model_dir=directory))


def test_a_seeded_reply_is_repeatable_and_another_seed_differs(tiny_model: LocalLanguageModel) -> None:
    first = complete(tiny_model, CHAT, GenerationSettings(seed=7, max_new_tokens=24))
    again = complete(tiny_model, CHAT, GenerationSettings(seed=7, max_new_tokens=24))
    other = complete(tiny_model, CHAT, GenerationSettings(seed=8, max_new_tokens=24))
    assert first == again
    assert first != other


def test_the_reply_streams_in_pieces_within_the_token_limit(tiny_model: LocalLanguageModel) -> None:
    # Without a sentence limit: it holds text back until a sentence ends, which noise rarely does.
    pieces = list(tiny_model.stream(CHAT, GenerationSettings(seed=1, max_new_tokens=12, max_sentences=None)))
    longer = complete(tiny_model, CHAT, GenerationSettings(seed=1, max_new_tokens=24, max_sentences=None))
    assert 1 < len(pieces) <= 12  # every piece holds at least one new token
    assert longer.startswith("".join(pieces).rstrip())  # the same samples, stopped earlier


def test_a_reply_prefix_is_continued_not_repeated(tiny_model: LocalLanguageModel) -> None:
    prefixed: list[Message] = [*CHAT, {"role": "assistant", "content": "You found a silver key"}]
    rendered = tiny_model.render(prefixed)
    assert rendered.endswith("<|im_start|>assistant\nYou found a silver key")
    reply = complete(tiny_model, prefixed, GenerationSettings(seed=2, max_new_tokens=8))
    assert not reply.startswith("You found a silver key")


def test_the_script_mask_forbids_byte_fragments_and_control_characters_but_no_word_or_end(
    tiny_model: LocalLanguageModel,
) -> None:
    mask = tiny_model.script_mask("latin")
    tokenizer = tiny_model.tokenizer
    assert mask.shape == (tiny_model.model.config.vocab_size,)
    for word in ("lantern", " lighthouse", " Eve", ".", " 3"):
        assert not mask[tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word))].any(), word
    assert not mask[sorted(tiny_model.end_token_ids)].any()
    fragment = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("ш"))  # two byte tokens, each half a letter
    assert mask[fragment].all()
    control = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("\x18"))
    assert mask[control].all()


def test_a_reply_never_writes_a_forbidden_token_and_without_the_mask_the_noise_does(
    tiny_model: LocalLanguageModel,
) -> None:
    mask = tiny_model.script_mask("latin")
    masked, unmasked = [], []
    for seed in range(6):
        for script, rows in (("latin", masked), (None, unmasked)):
            settings = GenerationSettings(seed=seed, max_new_tokens=24, temperature=1.5, top_p=1.0, script=script)
            steps = tiny_model._token_steps(tiny_model._encode(CHAT), settings, 1)
            rows.extend(int(step[0]) for step in steps if int(step[0]) >= 0)
    assert not mask[masked].any()
    assert mask[unmasked].any()  # a random model does sample them: the test above is not vacuous


def test_a_reply_that_runs_out_of_tokens_ends_at_a_whole_sentence(tiny_model: LocalLanguageModel) -> None:
    endings = 0
    for seed in range(12):
        settings = GenerationSettings(seed=seed, max_new_tokens=40, temperature=1.2, max_sentences=3)
        reply = complete(tiny_model, CHAT, settings)
        unlimited = complete(
            tiny_model, CHAT, GenerationSettings(seed=seed, max_new_tokens=40, temperature=1.2, max_sentences=None)
        )
        assert unlimited.startswith(reply)
        if "." in unlimited[:-1] and reply != unlimited:
            assert reply.endswith((".", "!", "?", "…")), reply
            endings += 1
    assert endings  # some noisy reply did hold a sentence end and was cut back to it


def test_candidates_are_sampled_as_one_batch_and_differ(tiny_model: LocalLanguageModel) -> None:
    candidates = tiny_model.candidates(CHAT, GenerationSettings(seed=3, max_new_tokens=10), 4)
    assert len(candidates) == 4
    assert len(set(candidates)) > 1


def test_greedy_decoding_of_a_batch_matches_the_single_stream(tiny_model: LocalLanguageModel) -> None:
    settings = GenerationSettings(temperature=0.0, max_new_tokens=10)
    single = complete(tiny_model, CHAT, settings)
    batch = tiny_model.candidates(CHAT, settings, 2)
    assert batch == [single, single]


def prompt_read_counted(model: LocalLanguageModel, messages: list[Message]) -> tuple[torch.Tensor, int]:
    """The logits after `messages` (1, vocabulary), and how many of its tokens the model read to get them."""
    widths: list[int] = []
    hook = model.model.register_forward_pre_hook(
        lambda module, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        _, logits = model.prompt_read(model._encode(messages))
    finally:
        hook.remove()
    return logits, sum(widths)


def test_a_prompt_read_again_is_not_read_and_one_that_starts_the_same_reads_only_the_rest(tmp_path: Path) -> None:
    # Unquantised: int8 dynamic quantisation scales activations per forward pass, so a prompt read in two parts
    # gives logits a little apart from one read whole; in float the two agree.
    model = LocalLanguageModel(LocalModelConfig(model_dir=write_tiny_model(tmp_path), quantize=False))
    persona = "You are Eve, the keeper of the lighthouse on the island, patient and precise. " * 3
    first: list[Message] = [{"role": "system", "content": persona}, {"role": "user", "content": "Who are you?"}]
    later: list[Message] = [{"role": "system", "content": persona}, {"role": "user", "content": "Is the sea rough?"}]

    logits, read = prompt_read_counted(model, first)
    assert read == len(model._encode(first)[0])
    again, read_again = prompt_read_counted(model, first)
    assert read_again == 0
    assert torch.equal(again, logits)

    shared = shared_start(model._encode(first)[0], model._encode(later)[0])
    assert shared > 16
    later_logits, later_read = prompt_read_counted(model, later)
    assert later_read == len(model._encode(later)[0]) - shared
    model._prompts_read.clear()
    whole_logits, _ = prompt_read_counted(model, later)
    torch.testing.assert_close(later_logits, whole_logits)
    # The cache handed out is the reader's to decode into: decoding into it leaves the kept one as it was.
    cache, _ = model.prompt_read(model._encode(later))
    model.model(input_ids=torch.tensor([[1, 2, 3]]), use_cache=True, **{model.cache_argument: cache})
    assert torch.equal(prompt_read_counted(model, later)[0], whole_logits)
    assert complete(model, first, GenerationSettings(seed=4, max_new_tokens=8)) == complete(
        model, first, GenerationSettings(seed=4, max_new_tokens=8)
    )


def test_only_the_last_few_prompts_are_kept(tiny_model: LocalLanguageModel) -> None:
    for number in range(PROMPTS_KEPT + 2):
        complete(tiny_model, [{"role": "user", "content": f"Question {number}"}], GenerationSettings(max_new_tokens=2))
    assert len(tiny_model._prompts_read) == PROMPTS_KEPT


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=12), st.lists(st.integers(0, 3), max_size=12))
def test_the_shared_start_is_the_longest_common_prefix(first: list[int], second: list[int]) -> None:
    expected = next(
        (index for index, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), min(len(first), len(second))
    )
    assert shared_start(torch.tensor(first, dtype=torch.long), torch.tensor(second, dtype=torch.long)) == expected


@pytest.mark.slow
def test_the_default_model_converts_once_then_reloads_from_the_cache_and_continues_a_fact(tmp_path: Path) -> None:
    started = time.perf_counter()
    converted = converted_gguf(default_gguf_path(), tmp_path)
    cold_seconds = time.perf_counter() - started
    assert (converted / "model.safetensors").is_file()
    assert not list(tmp_path.glob(".*.partial"))

    model = LocalLanguageModel(LocalModelConfig(cache_dir=tmp_path))
    assert model.directory == converted
    assert model.load_seconds < cold_seconds / 3
    question: list[Message] = [
        {"role": "system", "content": "You are Eve, the harbourmaster. The player told you they found a silver key."},
        {"role": "user", "content": "What did I find at the docks?"},
        {"role": "assistant", "content": "You found a silver key at the docks"},
    ]
    continuation = complete(model, question, GenerationSettings(seed=0, max_new_tokens=24))
    assert continuation.strip()
    assert "<|im" not in continuation
