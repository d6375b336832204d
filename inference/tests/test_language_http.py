"""The HTTP backend against a real OpenAI-compatible server (`python -m inference.language.serve`) in a subprocess."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from inference.language.base import GenerationSettings, Message, complete
from inference.language.local import LocalLanguageModel, LocalModelConfig
from inference.language.openai_compatible import (
    LanguageModelUnavailable,
    OpenAICompatibleConfig,
    OpenAICompatibleLanguageModel,
)
from inference.language.tiny import write_tiny_model

CHAT: list[Message] = [
    {"role": "system", "content": "You are Eve, the harbourmaster."},
    {"role": "user", "content": "Hello, who are you?"},
]
REPOSITORY = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(model_dir: Path, port: int) -> subprocess.Popen[str]:
    # Unquantised on both ends: the server reads a prompt that starts like one it read before only from where
    # the two part, and int8 dynamic quantisation scales activations per forward pass, so its logits would
    # differ a little from a fresh local model's, which reads the prompt whole. In float the two agree.
    command = ["-m", "inference.language.serve", "--model", str(model_dir), "--port", str(port), "--no-quantize"]
    return subprocess.Popen(
        [sys.executable, *command],
        cwd=REPOSITORY,
        env=os.environ | {"HF_HUB_OFFLINE": "1"},
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def server_url(tiny_dir: Path) -> Iterator[str]:
    server = start_server(tiny_dir, 0)
    assert server.stdout is not None
    line = server.stdout.readline()  # "serving NAME on http://HOST:PORT/v1" once it listens
    assert "serving" in line, line
    yield line.split(" on ")[1].strip()
    server.terminate()
    server.wait(timeout=10)


def test_the_server_lists_its_model(server_url: str) -> None:
    listing = requests.get(f"{server_url}/models", timeout=5).json()
    assert listing["object"] == "list"
    assert len(listing["data"]) == 1


def test_a_streamed_reply_over_http_equals_the_local_models_reply(server_url: str, tiny_dir: Path) -> None:
    # Without a sentence limit, which holds text back until a sentence ends: the reply streams token by token.
    settings = GenerationSettings(seed=8, max_new_tokens=16, max_sentences=None)
    local = complete(LocalLanguageModel(LocalModelConfig(model_dir=tiny_dir, quantize=False)), CHAT, settings)
    remote_model = OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=server_url))
    pieces = list(remote_model.stream(CHAT, settings))
    assert len(pieces) > 1
    assert "".join(pieces) == local


def test_the_sentence_limit_cuts_a_reply_over_http_as_it_cuts_it_locally(server_url: str, tiny_dir: Path) -> None:
    local_model = LocalLanguageModel(LocalModelConfig(model_dir=tiny_dir, quantize=False))
    remote_model = OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=server_url))
    cut = 0
    for seed in range(8):
        settings = GenerationSettings(seed=seed, max_new_tokens=40, temperature=1.2, max_sentences=2)
        local = complete(local_model, CHAT, settings)
        assert complete(remote_model, CHAT, settings) == local
        unlimited = complete(local_model, CHAT, dataclasses.replace(settings, max_sentences=None))
        cut += local != unlimited
    assert cut  # some reply was cut (at its second sentence or back to its last whole one)


def test_a_reply_prefix_is_continued_over_http(server_url: str, tiny_dir: Path) -> None:
    prefixed: list[Message] = [*CHAT, {"role": "assistant", "content": "You found a silver key"}]
    settings = GenerationSettings(seed=4, max_new_tokens=10)
    local = complete(LocalLanguageModel(LocalModelConfig(model_dir=tiny_dir, quantize=False)), prefixed, settings)
    remote = complete(OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=server_url)), prefixed, settings)
    assert remote == local


def test_a_malformed_request_is_refused_without_retrying(server_url: str) -> None:
    response = requests.post(f"{server_url}/chat/completions", json={"messages": [{"role": "x"}]}, timeout=5)
    assert response.status_code == 400
    assert "role" in response.json()["error"]["message"]


def test_it_gives_up_on_a_server_that_is_not_there_after_its_retries() -> None:
    config = OpenAICompatibleConfig(base_url=f"http://127.0.0.1:{free_port()}/v1", retries=2, backoff=0.01)
    with pytest.raises(LanguageModelUnavailable):
        complete(OpenAICompatibleLanguageModel(config), CHAT, GenerationSettings(max_new_tokens=4))


def test_it_retries_until_a_starting_server_answers(tiny_dir: Path) -> None:
    port = free_port()
    server = start_server(tiny_dir, port)
    try:
        # Sent at once: the first attempts find the port closed while the server is still importing torch.
        config = OpenAICompatibleConfig(base_url=f"http://127.0.0.1:{port}/v1", retries=12, backoff=0.25)
        reply = complete(OpenAICompatibleLanguageModel(config), CHAT, GenerationSettings(seed=1, max_new_tokens=6))
        assert reply
    finally:
        server.terminate()
        server.wait(timeout=10)
