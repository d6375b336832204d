"""The HTTP backend against Hugging Face's own OpenAI-compatible server, `transformers serve`, in a subprocess.

The server is pinned to the tiny model in a local folder and runs offline (HF_HUB_OFFLINE=1). The backend is
configured as the worker configures it, with the server's URL alone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from transformers import GenerationConfig

from inference.language.base import DecodingOutcome, GenerationSettings, Message, complete
from inference.language.local import LocalLanguageModel, LocalModelConfig
from inference.language.openai_compatible import OpenAICompatibleConfig, OpenAICompatibleLanguageModel
from inference.language.tiny import write_tiny_model

# Starting the server (torch, transformers, FastAPI) takes about 7 s and the module about 18 s on two cores.
pytestmark = pytest.mark.slow

CHAT: list[Message] = [
    {"role": "system", "content": "You are Eve, the harbourmaster."},
    {"role": "user", "content": "Hello, who are you?"},
]
STARTUP_SECONDS = 120  # a loaded CI machine; a healthy start takes a tenth of it
LISTENING = re.compile(r"Uvicorn running on (http://\S+)")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_tiny_model(tmp_path_factory.mktemp("tiny"))
    # transformers serve samples only where the model's generation config says so: a request's temperature
    # sets how it samples, and 0 turns sampling off, but a model without `do_sample` (the tiny one, and
    # SmolLM2 as we convert it) is decoded greedily at every temperature and seed.
    generation = GenerationConfig.from_pretrained(directory)
    generation.do_sample = True
    generation.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def server_url(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    command = [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        str(tiny_dir),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--device",
        "cpu",
    ]
    # The log goes to a file: a pipe nobody reads would fill with uvicorn's access lines and stall the server.
    with log.open("w") as sink:
        server = subprocess.Popen(command, env=os.environ | {"HF_HUB_OFFLINE": "1"}, stdout=sink, stderr=sink)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while (listening := LISTENING.search(log.read_text())) is None:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield f"{listening.group(1)}/v1"  # port 0 took a free port; uvicorn names the one it took
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def remote(server_url: str) -> OpenAICompatibleLanguageModel:
    return OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=server_url))


def test_it_asks_for_the_model_the_server_is_pinned_to(remote: OpenAICompatibleLanguageModel, tiny_dir: Path) -> None:
    complete(remote, CHAT, GenerationSettings(seed=1, max_new_tokens=4))
    assert remote.served_model == str(tiny_dir)
    # Why the backend asks: a pinned server refuses any other name, such as the "default" it used to send.
    body = remote.request_body(CHAT, GenerationSettings(max_new_tokens=4), continuation=False) | {"model": "default"}
    refused = requests.post(f"{remote.config.base_url}/chat/completions", json=body, timeout=10)
    assert refused.status_code == 400
    assert "pinned" in refused.text


def test_a_sampled_reply_streams_in_several_pieces_of_text(remote: OpenAICompatibleLanguageModel) -> None:
    # Without a sentence limit, which releases whole sentences: noise rarely ends one.
    pieces = list(remote.stream(CHAT, GenerationSettings(seed=1, max_new_tokens=24, max_sentences=None)))
    assert len(pieces) > 1
    assert all(isinstance(piece, str) for piece in pieces)
    assert "".join(pieces).strip()


def test_the_seed_makes_a_sampled_reply_repeatable(remote: OpenAICompatibleLanguageModel) -> None:
    first, again, other = (
        complete(remote, CHAT, GenerationSettings(seed=seed, max_new_tokens=24)) for seed in (1, 1, 2)
    )
    assert first == again
    assert first != other


def test_max_tokens_ends_the_reply_early(remote: OpenAICompatibleLanguageModel) -> None:
    short = complete(remote, CHAT, GenerationSettings(seed=3, max_new_tokens=6))
    long = complete(remote, CHAT, GenerationSettings(seed=3, max_new_tokens=24))
    # The same seed draws the same first tokens, so the short reply is where the long one was cut.
    assert short
    assert long.startswith(short)
    assert len(short) < len(long)


def test_a_stop_sequence_ends_the_reply_before_it(remote: OpenAICompatibleLanguageModel) -> None:
    unstopped = complete(remote, CHAT, GenerationSettings(seed=1, max_new_tokens=24))
    # Letters from the second half of the reply, so the test holds whatever noise this seed draws.
    stop = re.findall(r"[A-Za-z]{3,}", unstopped[len(unstopped) // 2 :])[0]
    stopped = complete(remote, CHAT, GenerationSettings(seed=1, max_new_tokens=24, stop=(stop,)))
    assert stopped == unstopped[: unstopped.find(stop)].rstrip()


def test_at_temperature_zero_it_decodes_token_for_token_as_the_local_model(
    remote: OpenAICompatibleLanguageModel, tiny_dir: Path
) -> None:
    # The server runs the float32 weights with no repetition penalty (OpenAI's API has no such field, and
    # the backend sends none) and no script mask (nor that), so the local model is asked for the same.
    local = LocalLanguageModel(LocalModelConfig(model_dir=tiny_dir, quantize=False))
    settings = GenerationSettings(temperature=0.0, max_new_tokens=12, repetition_penalty=1.0, script=None)
    # The tiny model ties its input and output embeddings, so its greedy choice repeats the last token of
    # the prompt: the "\n" that ends the template's assistant header. Both cleaned replies are therefore
    # empty, and it is the raw streams that show the two decoded alike. The local model yields a piece for each
    # token; the server sends what its streamer holds when it flushes, several tokens at once when it falls behind
    # (seen on an idle machine as well), so the texts are compared, not the pieces.
    remote_outcome, local_outcome = DecodingOutcome(), DecodingOutcome()
    remote_raw = list(remote._raw_text(CHAT, settings, False, remote_outcome))
    local_raw = list(local._raw_text(CHAT, settings, local_outcome))
    assert len(local_raw) == settings.max_new_tokens
    assert "".join(remote_raw) == "".join(local_raw)
    assert remote_outcome.ran_out and local_outcome.ran_out  # finish_reason "length" from transformers serve
    assert complete(remote, CHAT, settings) == complete(local, CHAT, settings)


def test_a_reply_prefix_it_cannot_continue_is_followed_by_a_reply_of_its_own(server_url: str) -> None:
    statuses: list[int] = []  # of the chat requests the backend sends

    def record(response: requests.Response, *args: object, **kwargs: object) -> None:
        if response.request.method == "POST":
            statuses.append(response.status_code)

    session = requests.Session()
    session.hooks["response"].append(record)
    remote = OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=server_url), session=session)
    prefixed: list[Message] = [*CHAT, {"role": "assistant", "content": "You found a silver key."}]
    settings = GenerationSettings(seed=5, max_new_tokens=16)
    # transformers serve refuses vLLM's continuation fields (422, "Unexpected fields"), and it renders every
    # chat template with the assistant's turn opened, so a prefix becomes a closed turn of its own (asking
    # for `continue_final_message` in `chat_template_kwargs` fails with a 500). The backend asks again
    # without the fields and shows the server's next turn after the prefix.
    reply = complete(remote, prefixed, settings)
    assert statuses == [422, 200]
    assert not remote.continues_prefixes
    assert reply.startswith(" ")
    assert reply.strip()
    assert reply[1] != " "
    # The refusal is remembered: the next prefix is sent once, without the fields.
    statuses.clear()
    assert complete(remote, prefixed, settings) == reply
    assert statuses == [200]
    # The same as a backend configured not to send the fields.
    plain = OpenAICompatibleLanguageModel(OpenAICompatibleConfig(base_url=server_url, continue_final_message=False))
    assert complete(plain, prefixed, settings) == reply
