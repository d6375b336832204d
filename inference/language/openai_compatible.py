"""The HTTP backend: any server that speaks OpenAI's streaming `/v1/chat/completions` (vLLM, llama.cpp's
server, Ollama, `transformers serve`, or our own `python -m inference.language.serve`).

Replies stream as server-sent events (`data: {json}` lines, ended by `data: [DONE]`), as the OpenAI API
reference describes. A request that fails before its first token (refused connection, timeout, HTTP 429 or
5xx) is retried with exponential backoff; once text has reached the reader a retry would repeat it, so a
failure mid-reply is raised instead. A reply prefix (a last "assistant" message) is sent with vLLM's
`continue_final_message` and `add_generation_prompt` fields, which our server also honours. A server that
refuses those fields by name (`transformers serve` answers 422) is asked again without them, at once and from
then on: it then writes a turn of its own after the prefix, which the stream sets off from the prefix with a
space. With no model name configured, the first request asks `/v1/models` which model the server serves:
vLLM and a pinned `transformers serve` refuse any other name.

GenerationSettings' sentence limit is applied here, to the streamed text (a finish_reason of "length" says the
token budget ran out, so an unfinished last sentence is dropped); its script mask is a local-backend option,
which the servers have no field for, and is left out.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import requests

from inference.language.base import DecodingOutcome, GenerationSettings, Message, cleaned

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class LanguageModelUnavailable(RuntimeError):
    """The server could not be reached or kept failing after every retry."""


@dataclass(frozen=True)
class OpenAICompatibleConfig:
    """Where the server is and how patiently to talk to it."""

    base_url: str  # up to and including /v1, e.g. http://gpu-box:8000/v1
    # The name the server knows the model by; None takes the first its /v1/models lists, which is the model
    # of a server that serves one (vLLM, llama.cpp, a pinned transformers serve, ours).
    model: str | None = None
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
    # Send a reply prefix as a continuation (vLLM, ours); a server that refuses the fields (transformers serve)
    # turns it off by itself, so False only saves that first refused request.
    continue_final_message: bool = True


class OpenAICompatibleLanguageModel:
    """Streams chat replies from an OpenAI-compatible server."""

    def __init__(self, config: OpenAICompatibleConfig, session: requests.Session | None = None) -> None:
        self.config = config
        self.session = session or requests.Session()
        # Cleared when the server refuses the continuation fields, so that later prefixes are not refused again.
        self.continues_prefixes = config.continue_final_message
        self.served_model = config.model  # learnt from /v1/models on the first request when not configured

    def stream(self, messages: list[Message], settings: GenerationSettings) -> Iterator[str]:
        outcome = DecodingOutcome()
        if not messages or messages[-1]["role"] != "assistant":
            return cleaned(self._raw_text(messages, settings, False, outcome), settings, outcome=outcome)
        return self._continuation(messages, settings, outcome)

    def _continuation(
        self, messages: list[Message], settings: GenerationSettings, outcome: DecodingOutcome
    ) -> Iterator[str]:
        raw = self._raw_text(messages, settings, True, outcome)
        # Asking for the first piece sends the request; once it is answered, whether the server continues
        # prefixes is known.
        pieces = itertools.chain([next(raw, "")], raw)
        if self.continues_prefixes:
            yield from cleaned(pieces, settings, continuation=True, outcome=outcome)
            return
        # The server wrote a turn of its own after the prefix: cleaned as a fresh reply (a leading label
        # dropped) and set off from the prefix by a space, so that the two read as one reply.
        fresh = cleaned(pieces, settings, outcome=outcome)
        for piece in fresh:
            piece = piece.lstrip()
            if piece:
                yield " " + piece
                break
        yield from fresh

    def request_body(self, messages: list[Message], settings: GenerationSettings, continuation: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_model or "default",  # for a server that lists no model; ours ignores the name
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
        if continuation and self.continues_prefixes:
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    def _raw_text(
        self, messages: list[Message], settings: GenerationSettings, continuation: bool, outcome: DecodingOutcome
    ) -> Iterator[str]:
        authorization = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        delay = self.config.backoff
        attempt = 0
        while True:
            last = attempt == self.config.retries
            try:
                if self.served_model is None:
                    self._learn_served_model(authorization)
                body = self.request_body(messages, settings, continuation)
                response = self.session.post(
                    url,
                    json=body,
                    headers=authorization | {"Accept": "text/event-stream"},
                    stream=True,
                    timeout=(self.config.connect_timeout, self.config.read_timeout),
                )
            except (requests.ConnectionError, requests.Timeout) as error:
                if last:
                    raise LanguageModelUnavailable(f"{url}: {error}") from error
                time.sleep(delay)
                delay = min(delay * 2, self.config.max_backoff)
                attempt += 1
                continue
            with response:
                if refuses_continuation(response, body):
                    self.continues_prefixes = False
                    continue  # at once and not as a retry: the server is up, it only refused the two fields
                if response.status_code in RETRYABLE_STATUS and not last:
                    time.sleep(delay)
                    delay = min(delay * 2, self.config.max_backoff)
                    attempt += 1
                    continue
                if response.status_code != 200:
                    raise LanguageModelUnavailable(f"{url} answered {response.status_code}: {response.text[:200]}")
                try:
                    yield from server_sent_text(response, outcome)
                except requests.RequestException as error:
                    raise LanguageModelUnavailable(f"{url} failed mid-reply: {error}") from error
                return

    def _learn_served_model(self, authorization: dict[str, str]) -> None:
        url = self.config.base_url.rstrip("/") + "/models"
        timeout = (self.config.connect_timeout, self.config.read_timeout)
        with self.session.get(url, headers=authorization, timeout=timeout) as response:
            if response.status_code in RETRYABLE_STATUS:
                return  # starting or overloaded: asked again with the next attempt
            try:
                listed = response.json().get("data") if response.status_code == 200 else None
                self.served_model = str(listed[0]["id"]) if listed else "default"
            except (ValueError, AttributeError, LookupError, TypeError):
                self.served_model = "default"  # not a listing: a server without one takes any name

    def close(self) -> None:
        self.session.close()


def refuses_continuation(response: requests.Response, body: dict[str, Any]) -> bool:
    """Whether the server refused the request for the continuation fields that `body` carries."""
    return (
        "continue_final_message" in body
        and response.status_code in {400, 422}
        and "continue_final_message" in response.text
    )


def server_sent_text(response: requests.Response, outcome: DecodingOutcome | None = None) -> Iterator[str]:
    """The text deltas of a streamed chat completion; `outcome` learns whether max_tokens ended it."""
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
            if outcome is not None and choice.get("finish_reason") == "length":
                outcome.ran_out = True
            content = (choice.get("delta") or {}).get("content")
            if content:
                yield content
