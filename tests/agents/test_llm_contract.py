"""The contract every registered LLM backend must honour, on the prompts the loop sends (the critic, the
generation writer and the training writer: `agents.llm.contract.cases()`), run against each of them:

- `replay`: the recorded fixture, made with the real local server by `python -m bench.agents.llm
  --models qwen2.5-coder-1.5b --threads 1 --no-extra-buffers --record tests/agents/fixtures/llm_replay.json`
  (delete the file first to re-record; needed whenever a contract prompt, its variables or schema change);
- `openai`: ChatOpenAI against the fake endpoint of `tests/fakes/openai_server.py`;
- `local`: the real embedded llama.cpp server (slow: starts it once for the module).

Every backend in `LLM_BACKENDS` must have a factory here (a new backend cannot skip the contract).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from agents.llm import (
    LLM,
    LLM_BACKENDS,
    CallLog,
    LLMUnsupportedError,
    LocalCompleter,
    LocalConfig,
    OpenAICompleter,
    OpenAIConfig,
    PromptedLLM,
    PromptError,
    ReplayCompleter,
    ResponseCache,
)
from agents.llm.base import Completer
from agents.llm.contract import Case, cases

FIXTURE = Path(__file__).parent / "fixtures" / "llm_replay.json"
CASES = cases()
DIAGNOSE = CASES[0]

Factory = Callable[[Path], tuple[LLM, CallLog]]  # tmp dir -> fresh LLM (own cache + log) over one backend


def _factory(completer: Completer) -> Factory:
    def make(tmp: Path) -> tuple[LLM, CallLog]:
        log = CallLog(tmp / "calls.jsonl")
        return PromptedLLM(completer, cache=ResponseCache(tmp / "cache.sqlite"), call_log=log), log

    return make


@pytest.fixture(scope="module")
def local_completer() -> Iterator[LocalCompleter]:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    completer = LocalCompleter(LocalConfig(n_threads=1))  # tests share the cores
    completer.start()
    yield completer
    completer.close()


# the real embedded server is slow: its contract run is `slow` (`python -m bench.agents.llm` covers it)
BACKENDS = [pytest.param(n, marks=pytest.mark.slow) if n == "local" else n for n in LLM_BACKENDS.names()]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[tuple[str, Factory]]:
    if request.param == "replay":
        yield "replay", _factory(ReplayCompleter(FIXTURE))
    elif request.param == "openai":
        server = request.getfixturevalue("fake_openai")
        yield "openai", _factory(_openai(server.base_url))
    elif request.param == "local":
        yield "local", _factory(request.getfixturevalue("local_completer"))
    else:
        raise AssertionError(f"backend {request.param!r} is registered but has no contract factory here")


def _openai(base_url: str) -> OpenAICompleter:
    return OpenAICompleter(OpenAIConfig(base_url=base_url, model="fake", max_retries=0))


def _ask(llm: LLM, case: Case) -> BaseModel:
    return llm.structured(case.prompt, case.variables, case.schema, max_tokens=case.max_tokens)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_structured_returns_an_instance_of_the_schema(backend, case: Case, tmp_path: Path) -> None:
    name, make = backend
    llm, _ = make(tmp_path)
    answer = _ask(llm, case)
    assert isinstance(answer, case.schema)
    assert case.schema.model_validate(answer.model_dump()) == answer
    assert llm.backend == name
    if name == "openai":  # the fake endpoint's canned answers are valid ones: the loop's own checks take them
        assert case.valid(answer), case.name


def test_every_call_is_logged_and_a_repeat_is_a_cache_hit(backend, tmp_path: Path) -> None:
    name, make = backend
    llm, log = make(tmp_path)
    first, second = _ask(llm, DIAGNOSE), _ask(llm, DIAGNOSE)
    assert first == second
    rows = log.read()
    assert [r["cache_hit"] for r in rows] == [False, True]
    for r in rows:
        assert r["prompt_name"] == DIAGNOSE.prompt and len(r["prompt_hash"]) == 16
        assert r["backend"] == name and r["kind"] == "structured" and r["schema"] == "DiagnosisOut"
        assert r["ok"] and r["latency_s"] >= 0
        assert r["tokens_in"] > 0 and r["tokens_out"] > 0
    assert rows[0]["prompt_hash"] == rows[1]["prompt_hash"]
    # the messages and answer a person reads in `agents.replay --show`, stored once for both calls
    assert rows[0]["texts"] == rows[1]["texts"] and len(list(log.texts_dir.glob("*.txt"))) == 3
    user, answer = log.text(rows[0]["texts"]["user"]), log.text(rows[0]["texts"]["answer"])
    assert log.text(rows[0]["texts"]["system"]).strip() and DIAGNOSE.variables["summary"][:40] in user
    assert type(first).model_validate(json.loads(answer)) == first  # the tool-call arguments as returned


def test_the_cache_survives_a_rerun(backend, tmp_path: Path) -> None:
    make = backend[1]
    first = _ask(make(tmp_path)[0], DIAGNOSE)
    llm, log = make(tmp_path)  # a new process would build exactly this: same files, new objects
    assert _ask(llm, DIAGNOSE) == first
    assert [r["cache_hit"] for r in log.read()] == [False, True]


def test_a_missing_variable_fails_before_the_backend_is_asked(backend, tmp_path: Path) -> None:
    llm, log = backend[1](tmp_path)
    variables = {k: v for k, v in DIAGNOSE.variables.items() if k != "summary"}
    with pytest.raises(PromptError, match="summary"):
        llm.structured(DIAGNOSE.prompt, variables, DIAGNOSE.schema)
    assert log.read() == []


def test_images_are_refused_by_a_text_only_backend(backend, tmp_path: Path) -> None:
    llm, _ = backend[1](tmp_path)
    if llm.supports_images:
        pytest.skip(f"{backend[0]} accepts images")
    with pytest.raises(LLMUnsupportedError, match="images"):
        llm.structured(DIAGNOSE.prompt, DIAGNOSE.variables, DIAGNOSE.schema, images=[b"\x89PNG"])
