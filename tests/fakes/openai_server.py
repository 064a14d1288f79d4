"""A tiny OpenAI-compatible HTTP server on 127.0.0.1 for tests of the `openai` backend.

It answers `POST /v1/chat/completions` with canned replies and `GET /v1/models` with one model, and keeps
every request body so a test can check what the client sent (tools, tool_choice, max_tokens, images).
Replies queued with `push()` are used first, in order; after that `default(body)` decides.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, Any]]  # HTTP status, JSON body


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    """Answer the request `handler` is serving with `status` and `payload` as JSON."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def tool_name(body: dict[str, Any]) -> str:
    """The function the client asked for (the structured-output schema's name)."""
    tools = body.get("tools") or []
    return tools[0]["function"]["name"] if tools else ""


FIRST = "<first>"  # an argument value that stands for the first value of that field's enum in the request


def first_of_enums(arguments: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with each `FIRST` value replaced by the first value of its field's enum in the requested
    function's schema (the critic's factor enum lists the failure's candidates: they depend on the scene)."""
    tools = body.get("tools") or []
    props = tools[0]["function"]["parameters"].get("properties", {}) if tools else {}
    return {k: props[k]["enum"][0] if v == FIRST and "enum" in props.get(k, {}) else v
            for k, v in arguments.items()}


def tool_call_reply(arguments: dict[str, Any] | str, *, name: str = "", finish_reason: str = "tool_calls",
                    tokens: tuple[int, int] = (50, 20)) -> Callable[[dict[str, Any]], Reply]:
    """A reply calling the requested function with `arguments` (a dict, or raw text for malformed JSON; a
    `FIRST` value becomes its field's first enum value)."""

    def reply(body: dict[str, Any]) -> Reply:
        args = arguments if isinstance(arguments, str) else json.dumps(first_of_enums(arguments, body))
        function = {"name": name or tool_name(body), "arguments": args}
        call = {"id": "call_0", "type": "function", "function": function}
        return 200, _completion(body, {"role": "assistant", "content": None, "tool_calls": [call]},
                                finish_reason, tokens)

    return reply


def text_reply(text: str, *, finish_reason: str = "stop",
               tokens: tuple[int, int] = (40, 10)) -> Callable[[dict[str, Any]], Reply]:
    """A plain assistant message (no tool call)."""

    def reply(body: dict[str, Any]) -> Reply:
        return 200, _completion(body, {"role": "assistant", "content": text}, finish_reason, tokens)

    return reply


def error_reply(status: int, message: str = "fake failure") -> Callable[[dict[str, Any]], Reply]:
    """An HTTP error with an OpenAI-style error body."""
    return lambda body: (status, {"error": {"message": message, "type": "server_error", "code": status}})


def _completion(body: dict[str, Any], message: dict[str, Any], finish_reason: str,
                tokens: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)},
    }


class FakeOpenAIServer:
    """Context manager: `with FakeOpenAIServer(default) as srv: ... srv.base_url ... srv.requests`."""

    def __init__(self, default: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.default = default or text_reply("ok")
        self.queue: deque[Callable[[dict[str, Any]], Reply]] = deque()
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """OpenAI-compatible root for the client."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Callable[[dict[str, Any]], Reply]) -> None:
        """Queue replies for the next requests, in order."""
        self.queue.extend(replies)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, body: dict[str, Any]) -> Reply:
        self.requests.append(body)
        reply = self.queue.popleft() if self.queue else self.default
        return reply(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                send_json(self, status, payload)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(*fake._answer(body))

        return Handler
