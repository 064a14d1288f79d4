"""Bad model output becomes a typed `LLMOutputError` carrying the raw text (never a crash, never cached),
and a dead or failing endpoint becomes an `LLMBackendError`. Driven through the real ChatOpenAI path
against the fake endpoint."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agents.llm import (
    CallLog,
    LLMBackendError,
    LLMOutputError,
    OpenAICompleter,
    OpenAIConfig,
    PromptedLLM,
    ResponseCache,
)
from agents.llm.contract import cases, contract_inputs
from tests.fakes.openai_server import FIRST, FakeOpenAIServer, error_reply, text_reply, tool_call_reply

DIAGNOSE, SUBGOALS = cases()[0], cases()[2]


def _llm(base_url: str, tmp: Path, **config) -> tuple[PromptedLLM, CallLog]:
    log = CallLog(tmp / "calls.jsonl")
    completer = OpenAICompleter(OpenAIConfig(base_url=base_url, model="fake", max_retries=0, **config))
    return PromptedLLM(completer, cache=ResponseCache(tmp / "cache.sqlite"), call_log=log), log


def _diagnose(llm: PromptedLLM):
    return llm.structured(DIAGNOSE.prompt, DIAGNOSE.variables, DIAGNOSE.schema, max_tokens=64)


@pytest.mark.parametrize(
    ("reply", "problem", "raw"),
    [
        (tool_call_reply('{"explanation": "yaw", "phase": '), "invalid_json", '"explanation": "yaw"'),
        (tool_call_reply({"phase": "grasp", "factor": "piece_yaw"}), "schema", '"phase": "grasp"'),
        (tool_call_reply({"explanation": "x", "phase": "grasp", "factor": 3}), "schema", '"factor": 3'),
        (tool_call_reply('{"explanation": "yaw", "phase": "gr', finish_reason="length"), "truncated",
         '"phase": "gr'),
        (text_reply("The object was too wide."), "no_tool_call", "too wide"),
        (text_reply(""), "empty", ""),
    ],
    ids=["malformed-json", "missing-field", "wrong-type", "truncated", "prose-instead-of-call", "empty"],
)
def test_bad_structured_output_raises_a_typed_error_with_the_raw_text(
    fake_openai: FakeOpenAIServer, tmp_path: Path, reply, problem: str, raw: str
) -> None:
    llm, log = _llm(fake_openai.base_url, tmp_path)
    fake_openai.push(reply)
    with pytest.raises(LLMOutputError) as info:
        _diagnose(llm)
    err = info.value
    assert err.problem == problem and err.prompt_name == "critic_hybrid"
    assert raw in err.raw
    assert raw in err.feedback() and problem in err.feedback()
    (row,) = log.read()
    assert not row["ok"] and row["error"] == problem and not row["cache_hit"]


def test_a_failed_call_is_not_cached_so_the_retry_reaches_the_model(fake_openai: FakeOpenAIServer,
                                                                     tmp_path: Path) -> None:
    llm, log = _llm(fake_openai.base_url, tmp_path)
    fake_openai.push(tool_call_reply("{not json"))
    with pytest.raises(LLMOutputError):
        _diagnose(llm)
    answer = _diagnose(llm)  # the queue is empty: the canned valid answer
    assert answer.factor == "piece_yaw"
    assert len(fake_openai.requests) == 2
    assert [r["ok"] for r in log.read()] == [False, True]


def test_truncated_text_is_an_error(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    llm, _ = _llm(fake_openai.base_url, tmp_path)
    fake_openai.push(text_reply("Grasps fail when the", finish_reason="length"))
    with pytest.raises(LLMOutputError) as info:
        llm.text(DIAGNOSE.prompt, DIAGNOSE.variables, max_tokens=5)
    assert info.value.problem == "truncated" and info.value.raw == "Grasps fail when the"


def test_the_request_forces_the_schema_function_and_carries_max_tokens(fake_openai: FakeOpenAIServer,
                                                                       tmp_path: Path) -> None:
    llm, _ = _llm(fake_openai.base_url, tmp_path)
    llm.structured(SUBGOALS.prompt, SUBGOALS.variables, SUBGOALS.schema, max_tokens=321)
    body = fake_openai.requests[-1]
    assert body["max_tokens"] == 321  # llama.cpp ignores max_completion_tokens
    assert body["tool_choice"]["function"]["name"] == "StageOut"
    params = body["tools"][0]["function"]["parameters"]
    # the contract's diagnosis fails in the approach phase, which the family's `reach` covers
    assert params["properties"]["before"]["const"] == "reach"
    assert "reach" in [g.name for g in contract_inputs()["training"].subgoals]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_images_travel_as_png_data_urls(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    llm, _ = _llm(fake_openai.base_url, tmp_path, supports_images=True)
    png = tmp_path / "key.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    llm.structured(DIAGNOSE.prompt, DIAGNOSE.variables, DIAGNOSE.schema, images=[png, b"\x89PNG2"])
    content = fake_openai.requests[-1]["messages"][-1]["content"]
    urls = [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    # the images are part of the cache key: other images, another call
    llm.structured(DIAGNOSE.prompt, DIAGNOSE.variables, DIAGNOSE.schema, images=[b"\x89PNG3"])
    assert len(fake_openai.requests) == 2


def test_an_http_error_is_a_backend_error(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    llm, log = _llm(fake_openai.base_url, tmp_path)
    fake_openai.push(error_reply(500, "model exploded"))
    with pytest.raises(LLMBackendError, match="critic_hybrid"):
        _diagnose(llm)
    assert log.read()[0]["error"] == "LLMBackendError"


def test_an_unreachable_endpoint_is_a_backend_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm, _ = _llm(f"http://127.0.0.1:{port}/v1", tmp_path, timeout_s=5)
    with pytest.raises(LLMBackendError, match="Connection"):
        _diagnose(llm)


def test_tokens_and_latency_are_logged(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    llm, log = _llm(fake_openai.base_url, tmp_path)
    fake_openai.push(tool_call_reply({"keep": True, "factor": FIRST, "explanation": "c"}, tokens=(123, 45)))
    _diagnose(llm)
    (row,) = log.read()
    assert (row["tokens_in"], row["tokens_out"]) == (123, 45) and row["model"] == "fake"



def test_an_answer_cut_at_the_token_limit_is_truncated_even_if_it_parses(fake_openai: FakeOpenAIServer,
                                                                         tmp_path: Path) -> None:
    llm, _ = _llm(fake_openai.base_url, tmp_path)
    args = {"explanation": "e", "phase": "grasp", "factor": "object_width"}
    fake_openai.push(tool_call_reply(args, finish_reason="length"))
    with pytest.raises(LLMOutputError) as info:
        _diagnose(llm)
    assert info.value.problem == "truncated"
