"""A minimal OpenAI-compatible chat server around `LocalLanguageModel`: `python -m inference.language.serve`.

`transformers serve` would do, but it needs fastapi, uvicorn and the openai package, which Worldloom installs
only for its tests (the `dev` extra), and it cannot continue a reply prefix; this standard-library server
speaks the part of the API the HTTP backend uses: `GET /v1/models` and `POST /v1/chat/completions`, streamed
as server-sent events or answered whole, with vLLM's `continue_final_message` for reply prefixes (a last
assistant message is always continued). One reply is generated at a time (a CPU or a small GPU gains nothing
from running two); other requests wait their turn.
Production can run it on a GPU box with `--device cuda` and point workers' HTTP backend at it.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from inference.language.base import DecodingOutcome, GenerationSettings, LanguageModel, Message
from inference.language.local import LocalLanguageModel, LocalModelConfig

MAX_BODY_BYTES = 1 << 20  # a chat prompt is kilobytes; refuse anything that could only be abuse


def settings_from_body(body: dict[str, Any]) -> GenerationSettings:
    """Generation settings from an OpenAI request body, the defaults where a field is absent."""
    defaults = GenerationSettings()
    stop = body.get("stop") or ()
    return GenerationSettings(
        temperature=float(body.get("temperature", defaults.temperature)),
        max_new_tokens=int(body.get("max_completion_tokens") or body.get("max_tokens") or defaults.max_new_tokens),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        seed=body.get("seed"),
        top_p=float(body.get("top_p", defaults.top_p)),
        # A client asked for max_tokens, not for sentences: it cuts the stream itself (finish_reason "length"
        # tells it when the budget ended the reply). The script mask stays: this server speaks for a world.
        max_sentences=None,
    )


def messages_from_body(body: dict[str, Any]) -> list[Message]:
    """The chat messages, checked; ValueError for anything malformed."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    checked: list[Message] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in {"system", "user", "assistant"}:
            raise ValueError("each message needs a role of system, user or assistant")
        content = message.get("content", "")
        if isinstance(content, list):  # the OpenAI "content parts" form: keep its text parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            raise ValueError("message content must be text")
        checked.append({"role": message["role"], "content": content})
    return checked


def pieces(
    model: LanguageModel, messages: list[Message], settings: GenerationSettings, outcome: DecodingOutcome
) -> Iterator[str]:
    """The model's reply; `outcome` learns whether the token budget ended it, where the model can tell."""
    if isinstance(model, LocalLanguageModel):
        return model.stream(messages, settings, outcome)
    return model.stream(messages, settings)


def finish_reason(outcome: DecodingOutcome) -> str:
    return "length" if outcome.ran_out else "stop"


def make_handler(model: LanguageModel, model_name: str) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class ChatHandler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the standard library's name
            pass  # one line a request would drown the worker's own log

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self._json(404, {"error": {"message": "not found"}})
                return
            self._json(
                200, {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "worldloom"}]}
            )

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._json(404, {"error": {"message": "not found"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._json(413, {"error": {"message": "request too large"}})
                return
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                messages = messages_from_body(body)
                settings = settings_from_body(body)
            except (ValueError, TypeError) as error:
                self._json(400, {"error": {"message": str(error)}})
                return
            completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
            with lock:
                if body.get("stream"):
                    self._stream(completion_id, messages, settings)
                else:
                    outcome = DecodingOutcome()
                    text = "".join(pieces(model, messages, settings, outcome))
                    message = {"role": "assistant", "content": text}
                    choice = {"index": 0, "message": message, "finish_reason": finish_reason(outcome)}
                    created = int(time.time())
                    reply = {"id": completion_id, "object": "chat.completion", "created": created, "model": model_name}
                    self._json(200, reply | {"choices": [choice]})

        def _stream(self, completion_id: str, messages: list[Message], settings: GenerationSettings) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()  # HTTP/1.0: closing the connection ends the body

            def event(delta: dict[str, str], finish_reason: str | None) -> None:
                choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
                created = int(time.time())
                chunk = {"id": completion_id, "object": "chat.completion.chunk", "created": created}
                chunk |= {"model": model_name, "choices": [choice]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            try:
                event({"role": "assistant"}, None)
                outcome = DecodingOutcome()
                for piece in pieces(model, messages, settings, outcome):
                    event({"content": piece}, None)
                event({}, finish_reason(outcome))
                self.wfile.write(b"data: [DONE]\n\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client left; the generator is dropped and stops generating

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return ChatHandler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a local transformers model directory (default: SmolLM2-135M)")
    parser.add_argument("--cache-dir", type=Path, help="where the converted default model is kept")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-quantize", action="store_true", help="keep fp32 Linear layers on CPU")
    parser.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's own choice)")
    arguments = parser.parse_args(argv)
    config = LocalModelConfig(
        model_dir=arguments.model,
        cache_dir=arguments.cache_dir,
        quantize=not arguments.no_quantize,
        device=arguments.device,
        threads=arguments.threads,
    )
    model = LocalLanguageModel(config)
    name = model.directory.name
    server = ThreadingHTTPServer((arguments.host, arguments.port), make_handler(model, name))
    host, port = str(server.server_address[0]), int(server.server_address[1])
    # Tests and supervisors wait for this line to know the server is ready and which port it took.
    print(f"serving {name} on http://{host}:{port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
