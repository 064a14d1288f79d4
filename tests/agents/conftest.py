"""Shared fixtures for the agents tests: a fake OpenAI-compatible endpoint that answers the loop's prompts
(`agents.llm.contract.cases()`: critic, generation writer, training writer) with valid canned replies."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from agents.llm.contract import contract_inputs
from agents.writers.training import stage_example
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text_reply, tool_call_reply, tool_name


@cache  # built on the first fake request, not when the agents tests are collected
def _canned() -> dict[str, dict[str, Any]]:
    """A usable answer to each contract prompt, read off the contract case: the known cause, an edit of
    the mode's factor to the diagnosis's own value, the seed training program's stages (or, in the stage
    form, the family's declared emphasis subgoal of its first phase that has one)."""
    c = contract_inputs()
    dx, train = c["diagnosis"], c["training"]
    edit = dx.edit[dx.factor]
    value = {"low": edit[0], "high": edit[1]} if isinstance(edit, (list, tuple)) else {"value": edit}
    return {
        "DiagnosisOut": {"keep": False, "factor": c["cause"], "phase": c["summary"].failing_phase,
                         "explanation": "The piece's yaw left its corners across the fingers."},
        "GenerationOut": {"rationale": "Scenes with the factor where it failed.",
                          "edits": [{"factor": dx.factor, **value}]},
        "SubgoalsOut": {"subgoals": [{"name": g.name, "done": g.done, "progress": g.progress}
                                     for g in train.subgoals]},
        "StageOut": {k: v for k, v in (stage_example(train, "") or {}).items() if k != "phase"},
    }


CANNED_TEXT = "The piece's yaw put its corners across the fingers."


def canned(body: dict[str, Any]) -> Reply:
    """A valid answer to any contract prompt: the canned arguments for the requested schema, else text."""
    name = tool_name(body)
    if name:
        return tool_call_reply(_canned()[name])(body)
    return text_reply(CANNED_TEXT)(body)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running fake endpoint answering contract prompts validly (queue other replies with `push`)."""
    with FakeOpenAIServer(canned) as server:
        yield server
