"""The HTTP backend: any server that speaks OpenAI's streaming `/v1/chat/completions` (vLLM, llama.cpp's
server, Ollama, `transformers serve`, or our own `python -m inference.language.serve`).

Replies stream as server-sent events (`data: {json}` lines, ended by `data: [DONE]`), as the OpenAI API
reference describes. A request that fails before its first token (refused connection, timeout, HTTP 429 or
5xx) is retried with exponential backoff; once text has reached the reader a retry would repeat it, so a
failure mid-reply is raised instead. A reply prefix (a last "assistant" message) is sent with vLLM's
`continue_final_message` and `add_generation_prompt` fields, which our server also honours.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import requests

from inference.language.base import GenerationSettings, Message, cleaned

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class LanguageModelUnavailable(RuntimeError):
    """The server could not be reached or kept failing after every retry."""


@dataclass(frozen=True)
class OpenAICompatibleConfig:
    """Where the server is and how patiently to talk to it."""

    base_url: str  # up to and including /v1, e.g. http://gpu-box:8000/v1
    model: str = "default"  # the name the server knows the model by; ours ignores it
    api_key: str | None = None  # sent as a bearer token when set
    # Seconds to open a connection: a live server on the same network answers in milliseconds.
    connect_timeout: float = 3.0
    # Seconds to wait for the next piece of a reply: covers a long prompt's prefill on a busy server.
    read_timeout: float = 30.0
    # Attempts after the first, for failures before any text arrived.
    retries: int = 2
    # Seconds before the first retry, doubled each time: rides out a restart without hammering it.
    backoff: float = 0.5
    # The longest wait between two attempts, so a long retry budget still notices a server that came back.
    max_backoff: float = 8.0
    # Send a reply prefix as a continuation (vLLM, transformers serve, ours); off for servers that reject it.
    continue_final_message: bool = True


class OpenAICompatibleLanguageModel:
    """Streams chat replies from an OpenAI-compatible server."""

    def __init__(self, config: OpenAICompatibleConfig, session: requests.Session | None = None) -> None:
        self.config = config
        self.session = session or requests.Session()

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        continuation = bool(messages) and messages[-1]["role"] == "assistant"
        return cleaned(self._raw_text(messages, settings, continuation), settings, continuation=continuation)

    def request_body(self, messages: list[Message], settings: GenerationSettings, continuation: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "stream": True,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": settings.max_new_tokens,
        }
        if settings.stop:
            body["stop"] = list(settings.stop)[:4]  # OpenAI accepts at most four; the cleaner applies them all
        if settings.seed is not None:
            body["seed"] = settings.seed
        if continuation and self.config.continue_final_message:
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    def _raw_text(self, messages: list[Message], settings: GenerationSettings, continuation: bool) -> Iterator[str]:
        headers = {"Accept": "text/event-stream"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        body = self.request_body(messages, settings, continuation)
        delay = self.config.backoff
        for attempt in range(self.config.retries + 1):
            last = attempt == self.config.retries
            try:
                response = self.session.post(
                    url, json=body, headers=headers, stream=True,
                    timeout=(self.config.connect_timeout, self.config.read_timeout),
                )  # fmt: skip
            except (requests.ConnectionError, requests.Timeout) as error:
                if last:
                    raise LanguageModelUnavailable(f"{url}: {error}") from error
                time.sleep(delay)
                delay = min(delay * 2, self.config.max_backoff)
                continue
            with response:
                if response.status_code in RETRYABLE_STATUS and not last:
                    time.sleep(delay)
                    delay = min(delay * 2, self.config.max_backoff)
                    continue
                if response.status_code != 200:
                    raise LanguageModelUnavailable(f"{url} answered {response.status_code}: {response.text[:200]}")
                try:
                    yield from server_sent_text(response)
                except requests.RequestException as error:
                    raise LanguageModelUnavailable(f"{url} failed mid-reply: {error}") from error
                return

    def close(self) -> None:
        self.session.close()


def server_sent_text(response: requests.Response) -> Iterator[str]:
    """The text deltas of a streamed chat completion."""
    for line in response.iter_lines(decode_unicode=True):
        if not line or not line.startswith("data:"):
            continue  # blank separators and ": keep-alive" comments
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        event = json.loads(data)
        if "error" in event:
            raise LanguageModelUnavailable(f"the server reported: {event['error']}")
        for choice in event.get("choices", []):
            content = (choice.get("delta") or {}).get("content")
            if content:
                yield content
