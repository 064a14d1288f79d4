"""The backend registry, prompt files and the call log / cache stores."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pydantic import BaseModel

from agents.llm import (
    LLM,
    LLM_BACKENDS,
    CallLog,
    CallRecord,
    Completion,
    LocalConfig,
    OpenAIConfig,
    PromptError,
    PromptLibrary,
    ResponseCache,
    make_llm,
)
from agents.llm.contract import cases
from common.registry import UnknownNameError


def test_the_three_backends_are_registered_and_typos_get_a_suggestion() -> None:
    assert LLM_BACKENDS.names() == ["local", "openai", "replay"]
    with pytest.raises(UnknownNameError):  # `--llm rules` means no model: it is not a backend
        make_llm("rules")
    with pytest.raises(UnknownNameError, match="Did you mean 'local'"):
        make_llm("lokal")


def test_configs_are_checked() -> None:
    with pytest.raises(ValueError, match="OpenAIConfig"):
        make_llm("openai")
    with pytest.raises(TypeError, match="takes a LocalConfig, not a OpenAIConfig"):
        make_llm("local", OpenAIConfig(base_url="http://x/v1", model="m"))
    with pytest.raises(ValueError, match="http"):
        OpenAIConfig(base_url="localhost:8080", model="m")
    with pytest.raises(ValueError, match="unknown local model"):
        LocalConfig(model="gpt-5")


def test_building_the_local_backend_starts_nothing() -> None:
    llm = make_llm("local")
    assert isinstance(llm, LLM) and llm.backend == "local" and not llm.supports_images
    assert llm.completer.server is None  # the server starts on the first call
    llm.close()


def test_every_shipped_prompt_renders_with_the_contract_variables() -> None:
    """Every shipped prompt is one the loop sends: the contract's three (the defaults) and the two other forms
    a config may ask for (the critic "alone", the training writer's whole list)."""
    import dataclasses

    from agents.critic.diagnose import critic_request
    from agents.llm.contract import contract_inputs
    from agents.writers.training import TRAIN_PROMPT, training_variables

    prompts = PromptLibrary()
    c = contract_inputs()
    config = dataclasses.replace(c["config"], llm_prompt="alone")
    alone = critic_request(c["summary"], c["generation"], config)
    sent = {case.prompt: case.variables for case in cases()}
    sent |= {alone.prompt: alone.variables, TRAIN_PROMPT: training_variables(c["training"], c["diagnosis"])}
    assert set(sent) == set(prompts.names())
    for name, variables in sent.items():
        rendered = prompts.render(name, variables)
        assert rendered.system.startswith("You are part of CoDA") and rendered.user
        assert "{{" not in rendered.user and "{%" not in rendered.user


def test_prompts_are_strict(tmp_path: Path) -> None:
    (tmp_path / "p.j2").write_text("{% block user %}Hello {{ name }}{% endblock %}")
    (tmp_path / "_partial.j2").write_text("{% block system %}sys{% endblock %}")
    (tmp_path / "child.j2").write_text('{% extends "_partial.j2" %}{% block user %}u {{ x }}{% endblock %}')
    prompts = PromptLibrary(tmp_path)
    assert prompts.names() == ["child", "p"]  # `_` partials are not prompts
    assert prompts.render("p", {"name": "arm"}).user == "Hello arm"
    assert prompts.render("p", {"name": "arm"}).system == ""
    child = prompts.render("child", {"x": 1})
    assert (child.system, child.user) == ("sys", "u 1")
    with pytest.raises(PromptError, match="'name' is undefined"):
        prompts.render("p", {})
    with pytest.raises(PromptError, match="Did you mean 'child'"):
        prompts.render("chlid", {})


class _Other(BaseModel):
    x: int


def test_cache_round_trips_completions_across_threads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    done = Completion(text='{"x": 1}', tool_args={"x": 1}, tool_called=True, finish_reason="stop",
                      tokens_in=3, tokens_out=4)
    threads = [threading.Thread(target=cache.put, args=(f"k{i}", "p", done)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    again = ResponseCache(tmp_path / "c.sqlite")
    assert len(again) == 8 and again.get("k3") == done and again.get("nope") is None


def test_call_log_appends_lines(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "sub" / "calls.jsonl")
    for i in range(3):
        log.append(CallRecord(prompt_name=f"p{i}", prompt_hash="h", backend="b", model="m", kind="text",
                              cache_hit=False, latency_s=0.1))
    assert [r["prompt_name"] for r in log.read()] == ["p0", "p1", "p2"]
    assert all("time" in r for r in log.read())
