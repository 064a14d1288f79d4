"""`--llm openai`: the endpoint is probed before any work (issue #13) — unreachable, a refused key and an
unknown model are one-line usage errors; a reachable endpoint serving the model passes."""

from __future__ import annotations

import pytest

from agents.run_checks import probe_endpoint
from common.cli import UsageError
from tests.fakes.openai_server import FakeOpenAIServer, tool_call_reply


def test_a_reachable_endpoint_that_serves_the_model_passes() -> None:
    with FakeOpenAIServer(tool_call_reply({})) as server:
        probe_endpoint(server.base_url, "fake", "")


def test_an_unknown_model_is_named_with_what_the_endpoint_serves() -> None:
    with FakeOpenAIServer(tool_call_reply({})) as server, pytest.raises(UsageError, match="lists: fake"):
        probe_endpoint(server.base_url, "gpt-nope", "")


def test_an_unreachable_endpoint_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot reach the endpoint"):
        probe_endpoint("http://127.0.0.1:9/v1", "m", "", timeout=2)
