"""Shared fixtures for the agents tests: a fake OpenAI-compatible endpoint that answers our contract
prompts (`agents.bench.llm.CASES`) with valid canned replies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, Reply, text_reply, tool_call_reply, tool_name


def _stage(name: str, done: str, progress: str) -> dict[str, str]:
    return {"name": name, "done": done, "progress": progress}


CANNED: dict[str, dict[str, Any]] = {
    "FailureDiagnosis": {
        "factor": "object_width", "phase": "grasp",
        "explanation": "The 0.078 m box nearly fills the 0.080 m opening, so one pad misses.",
    },
    "SubgoalList": {"subgoals": [
        _stage("reach", "dist('ee', object) < 0.03", "1 - clip(dist('ee', object) / 0.3, 0, 1)"),
        _stage("grasp", "grasped(object)", "clip((0.08 - gripper()) / 0.04, 0, 1)"),
        _stage("lift", "lifted(object, 0.05)", "clip(bottom(object) / 0.05, 0, 1)"),
        _stage("place", "on(object, target)", "1 - clip(xy_dist(object, target) / 0.3, 0, 1)"),
    ]},
}
CANNED_TEXT = "Grasps fail when the box is nearly as wide as the gripper's maximum opening."


def canned(body: dict[str, Any]) -> Reply:
    """A valid answer to any contract prompt: the canned arguments for the requested schema, else text."""
    name = tool_name(body)
    if name:
        return tool_call_reply(CANNED[name])(body)
    return text_reply(CANNED_TEXT)(body)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running fake endpoint answering contract prompts validly (queue other replies with `push`)."""
    with FakeOpenAIServer(canned) as server:
        yield server
