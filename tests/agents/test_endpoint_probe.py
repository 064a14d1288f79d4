"""`--llm openai`: the endpoint is probed before any work (issue #13) — unreachable, a refused key and an
unknown model are one-line usage errors; a reachable endpoint serving the model passes, having asked only
for its model list (with the key), and one without a model list is taken as it is."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agents.run_checks import probe_endpoint
from common.cli import UsageError
from tests.fakes.openai_server import FakeOpenAIServer, send_json, tool_call_reply


@contextmanager
def _endpoint(status: int, payload: dict[str, Any]) -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    """An endpoint answering every request with `status` and `payload`; yields (its root, the requests it
    got as (method, path, Authorization header))."""
    seen: list[tuple[str, str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            seen.append((self.command, self.path, self.headers.get("Authorization", "")))
            send_json(self, status, payload)

        do_GET = do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


MODELS = {"object": "list", "data": [{"id": "served", "object": "model"}, {"id": "other", "object": "model"}]}


def test_a_reachable_endpoint_that_serves_the_model_passes() -> None:
    with _endpoint(200, MODELS) as (url, seen):
        assert probe_endpoint(url, "served", "sk-test") is None
    # one request: the model list, with the key; no completion is spent on the probe
    assert seen == [("GET", "/v1/models", "Bearer sk-test")]
    with FakeOpenAIServer(tool_call_reply({})) as server:
        probe_endpoint(server.base_url, "fake", "")
        assert server.requests == []


def test_an_unknown_model_is_named_with_what_the_endpoint_serves() -> None:
    with FakeOpenAIServer(tool_call_reply({})) as server, pytest.raises(UsageError, match="lists: fake"):
        probe_endpoint(server.base_url, "gpt-nope", "")


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_a_usage_error(status: int) -> None:
    with _endpoint(status, {"error": {"message": "bad key"}}) as (url, _), \
            pytest.raises(UsageError, match=f"refused the request \\(HTTP {status}\\).*OPENAI_API_KEY"):
        probe_endpoint(url, "served", "sk-wrong")


def test_an_endpoint_without_a_model_list_is_taken_as_it_is() -> None:
    with _endpoint(404, {"error": {"message": "not found"}}) as (url, seen):
        assert probe_endpoint(url, "anything", "") is None
    assert seen == [("GET", "/v1/models", "")]  # no key: no Authorization header


def test_an_unreachable_endpoint_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot reach the endpoint"):
        probe_endpoint("http://127.0.0.1:9/v1", "m", "", timeout=2)
