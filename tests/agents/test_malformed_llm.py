"""Malformed, truncated and schema-violating LLM output is retried with the error fed back, then
reported — the loop never crashes on it. The LLM is the real `openai` backend against a fake endpoint."""

from __future__ import annotations

import itertools
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from agents.graph.deps import HelperAgents, open_deps
from agents.graph.rundir import read_json, read_metrics
from agents.llm import CallLog, OpenAIConfig, make_llm
from tests.agents.graphkit import accepted_per_family, config, run_graph
from tests.fakes.agents import ScriptedAgents
from tests.fakes.openai_server import FIRST, FakeOpenAIServer, Reply, text_reply, tool_call_reply, tool_name
from tests.fakes.trainer import FakeTrainer

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

GOOD_DIAGNOSIS = {"keep": True, "factor": FIRST, "phase": "approach",  # the hybrid critic keeps candidate 1
                  "explanation": "The object is turned 0.5 rad, so the fingers never line up with its faces."}
BAD = (  # one of each kind of unusable answer
    tool_call_reply('{"factor": "obj_yaw", "phase": '),  # invalid JSON
    tool_call_reply(GOOD_DIAGNOSIS, finish_reason="length"),  # truncated
    tool_call_reply({**GOOD_DIAGNOSIS, "factor": "table_colour"}),  # a factor the scene does not have
    text_reply("I think it is the yaw."),  # no tool call
)


def _cycle(*replies: Any) -> Any:
    it = itertools.cycle(replies)
    return lambda body: next(it)(body)


class CriticFromLLM(HelperAgents):
    """The real LLM critic and writers, with the scripted (always validated) verifier."""

    def verify(self, diagnosis, program, run_batch, *, n, alpha, rng):
        return ScriptedAgents().verify(diagnosis, program, run_batch, n=n, alpha=alpha, rng=rng)


class WritersFromLLM(HelperAgents):
    """Scripted critic and verifier (a validated mode every round), the real LLM writers."""

    def __init__(self) -> None:
        super().__init__()
        self.scripted = ScriptedAgents()

    def diagnose(self, *a, **kw):
        return self.scripted.diagnose(*a, **kw)

    def verify(self, *a, **kw):
        return self.scripted.verify(*a, **kw)


@pytest.fixture
def llm_run(tmp_path: Path):
    stack = ExitStack()

    def make(default: Any, agents: Any, **over: Any) -> tuple[Any, FakeOpenAIServer, CallLog]:
        server = stack.enter_context(FakeOpenAIServer(default))
        run_dir = tmp_path / "run"
        log = CallLog(run_dir / "llm_calls.jsonl")
        endpoint = OpenAIConfig(base_url=server.base_url, model="fake", max_retries=0)
        llm = make_llm("openai", endpoint, call_log=log)
        stack.callback(llm.close)
        cfg = config("coda", llm="openai", llm_critic=True, **over)
        deps = stack.enter_context(open_deps(cfg, run_dir, llm=llm, call_log=log, agents=agents,
                                             trainer=FakeTrainer(-1.0)))
        return deps, server, log

    yield make
    stack.close()


def test_unusable_critic_answers_are_retried_then_reported(llm_run) -> None:
    deps, server, log = llm_run(_cycle(*BAD), CriticFromLLM(), max_retries=len(BAD) - 1)  # each kind once
    final = run_graph(deps)  # finishes: the round goes on without the diagnosis
    assert final["round"] == 1 and final["diagnoses"] == []
    assert len(final["critic_failures"]) == 1 and "critic failed" in final["critic_failures"][0]
    calls = log.read()
    problems = {c["error"] for c in calls if not c["ok"]}
    assert {"invalid_json", "truncated", "no_tool_call"} <= problems  # rejected by the backend's parser
    fed_back = [r["messages"][-1]["content"] for r in server.requests]
    assert any("factor: Input should be" in m and "table_colour" in m for m in fed_back)  # not a candidate
    assert len(calls) == 1 + deps.config.max_retries  # bounded: one loop, 1 + K critic calls per episode
    row = read_metrics(deps.run.root / "metrics.jsonl")[-1]
    assert row["critic"]["critic_failures"] == 1 and row["cost_total"]["llm_calls"] == len(calls)
    assert row["cost"]["diagnose"]["llm_calls"] == len(calls) and row["cost"]["diagnose"]["tokens_in"] > 0


def test_the_error_is_fed_back_and_a_later_answer_is_used(llm_run) -> None:
    deps, server, log = llm_run(tool_call_reply(GOOD_DIAGNOSIS), CriticFromLLM(), max_retries=2)
    server.push(BAD[0], BAD[2])  # two bad answers, then the default (valid) one
    final = run_graph(deps)
    assert len(final["diagnoses"]) == 1 and not final["critic_failures"]
    rec = read_json(deps.run.root / final["diagnoses"][0])
    first = server.requests[2]["tools"][0]["function"]["parameters"]["properties"]["factor"]["enum"][0]
    assert rec["diagnosis"]["factor"] == first and rec["diagnosis"]["critic_id"].startswith("openai")
    third = server.requests[2]["messages"][-1]["content"]
    assert "table_colour" in third and "factor: Input should be" in third  # the exact complaint, fed back
    critic = [c["ok"] for c in log.read() if c["prompt_name"] == "critic_hybrid"]
    assert critic == [False, False, True]  # malformed, then a factor that is not a candidate, then used


def _broken_writer(body: dict[str, Any]) -> Reply:
    if tool_name(body) == "StageOut":
        return tool_call_reply({"name": "x", "before": FIRST, "condition": "grasped(object",
                                "progress": "0"})(body)
    return tool_call_reply('{"edits": [', finish_reason="length")(body)


def test_unusable_writer_answers_never_stop_the_loop(llm_run) -> None:
    deps, server, log = llm_run(_broken_writer, WritersFromLLM(), rounds=2)
    final = run_graph(deps)
    rows = read_metrics(deps.run.root / "metrics.jsonl")
    compiled = rows[1]["critic"]["compiled"]
    assert len(compiled) == 1 and compiled[0]["fallback"] == "seed training program"
    assert compiled[0]["generation"] == "" and compiled[0]["generation_errors"] == deps.config.max_retries + 1
    # round 2: the mode's slot cannot get a program; it is reported failed and the seed fills its budget
    failed = [s for s in final["slots"] if s["status"] == "failed"]
    assert len(failed) == 1 and "the writer failed" in failed[0]["error"]
    assert accepted_per_family(final["slots"]) == {"pick_place": deps.config.budget}
    assert any(not c["ok"] and c["error"] == "truncated" for c in log.read())


def test_a_retry_after_the_same_error_is_not_the_same_prompt(llm_run) -> None:
    deps, server, log = llm_run(tool_call_reply(GOOD_DIAGNOSIS), CriticFromLLM(), max_retries=2)
    server.push(BAD[2], BAD[2])  # the same unusable answer twice, then the default (valid) one
    final = run_graph(deps)
    assert len(final["diagnoses"]) == 1
    second, third = (r["messages"][-1]["content"] for r in server.requests[1:3])
    assert "table_colour" in second and "table_colour" in third  # the complaint, each time
    assert second != third and "The last 2 answers all had this problem" in third
