"""A tiny randomly initialised chat model written to a folder, loadable like any other local model.

Tests and smoke checks use it to run the real loading, templating, decoding and serving paths in a fraction
of a second (nanochat tests its engine on a tiny config the same way). Its text is noise by construction.
"""

from __future__ import annotations

from pathlib import Path

import torch

# ChatML, the template SmolLM2 uses, so the tiny model renders prompts the way the default model does.
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TRAINING_TEXT = (
    "The lantern glows by the docks at night. Eve keeps the harbour ledger and remembers every visitor.",
    "You found a silver key near the old lighthouse; the tide was high and the fog rolled in.",
    "Open the door, walk to the tower, ask about the ship, follow the light, hide behind the crates.",
)


def write_tiny_model(directory: Path, *, seed: int = 0) -> Path:
    """Save a two-layer Llama with a small byte-level BPE tokenizer and a ChatML template into `directory`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # 300 merges over bytes: enough for a few whole words, small enough to train in milliseconds.
    trainer = trainers.BpeTrainer(
        vocab_size=556, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer)
    roles = {"eos_token": "<|im_end|>", "bos_token": "<|im_start|>", "unk_token": "<|endoftext|>"}
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token=roles["unk_token"], **roles)
    wrapped.chat_template = CHATML_TEMPLATE
    wrapped.save_pretrained(directory)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(wrapped),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        eos_token_id=wrapped.eos_token_id,
        bos_token_id=wrapped.bos_token_id,
        pad_token_id=wrapped.pad_token_id,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory
