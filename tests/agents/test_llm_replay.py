"""Record once, replay deterministically, fail loudly on an unseen prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.llm import (
    LLMOutputError,
    OpenAICompleter,
    OpenAIConfig,
    PromptedLLM,
    ReplayCompleter,
    ReplayConfig,
    ReplayMissError,
    make_llm,
)
from agents.llm.contract import cases
from tests.fakes.openai_server import FakeOpenAIServer, tool_call_reply

DIAGNOSE = cases()[0]


def _recorder(path: Path, base_url: str) -> PromptedLLM:
    inner = OpenAICompleter(OpenAIConfig(base_url=base_url, model="fake", max_retries=0))
    return PromptedLLM(ReplayCompleter(path, mode="record", inner=inner))


def _ask(llm, variables=DIAGNOSE.variables):
    return llm.structured(DIAGNOSE.prompt, variables, DIAGNOSE.schema, max_tokens=DIAGNOSE.max_tokens)


def test_record_then_replay_without_the_backend(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    recorded = _ask(_recorder(path, fake_openai.base_url))
    assert len(fake_openai.requests) == 1
    entry = next(iter(json.loads(path.read_text())["entries"].values()))
    assert entry["prompt_name"] == DIAGNOSE.prompt and entry["recorded_with"]["backend"] == "openai"

    replay = make_llm("replay", ReplayConfig(path=path))
    assert _ask(replay) == recorded and _ask(replay) == recorded
    assert len(fake_openai.requests) == 1  # replays never reach a backend


def test_record_mode_asks_only_for_unseen_prompts(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    _ask(_recorder(path, fake_openai.base_url))
    llm = _recorder(path, fake_openai.base_url)  # reopened: the first recording is reused
    _ask(llm)
    _ask(llm, {**DIAGNOSE.variables, "summary": "something else happened"})
    assert len(fake_openai.requests) == 2
    assert len(ReplayCompleter(path)) == 2


def test_an_unseen_prompt_fails_loudly_naming_it(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    _ask(_recorder(path, fake_openai.base_url))
    replay = PromptedLLM(ReplayCompleter(path))
    with pytest.raises(ReplayMissError, match="critic_hybrid") as info:
        _ask(replay, {**DIAGNOSE.variables, "instruction": "stack the cubes"})
    assert "1 recordings of 'critic_hybrid' exist with other content" in str(info.value)
    other = cases()[2]
    with pytest.raises(ReplayMissError, match="no recording of prompt 'writer_stage' at all"):
        replay.structured(other.prompt, other.variables, other.schema, max_tokens=other.max_tokens)


def test_a_recorded_bad_answer_replays_as_the_same_error(fake_openai: FakeOpenAIServer,
                                                        tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    fake_openai.push(tool_call_reply('{"factor": "object_width", "pha'))
    with pytest.raises(LLMOutputError) as recorded:
        _ask(_recorder(path, fake_openai.base_url))
    with pytest.raises(LLMOutputError) as replayed:
        _ask(PromptedLLM(ReplayCompleter(path)))
    assert (replayed.value.problem, replayed.value.raw) == (recorded.value.problem, recorded.value.raw)


def test_replay_needs_an_existing_file_and_record_needs_a_backend(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="record it first"):
        ReplayCompleter(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="inner"):
        ReplayCompleter(tmp_path / "new.json", mode="record")


def test_the_committed_fixture_covers_every_contract_case() -> None:
    fixture = Path(__file__).parent / "fixtures" / "llm_replay.json"
    entries = json.loads(fixture.read_text())["entries"].values()
    assert {e["prompt_name"] for e in entries} == {c.prompt for c in cases()}
    assert all(e["recorded_with"]["backend"] == "local" for e in entries)
