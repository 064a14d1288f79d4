"""The writer's retry feedback is bounded whatever error text the sandbox returns (issue #43, item 8): a
program that builds its scene with `SceneSpec.model_construct` skips validation in its own process; the
parent's validation then reports thousands of errors, and that text used to reach the writer's next prompt
whole. It now arrives summarised: the count, the first few errors, a cap."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agents.graph.deps import HelperAgents
from agents.graph.nodes.generate import generate
from agents.graph.state import new_slot
from sim.scene import SceneSpec
from tests.agents.graphkit import call
from tests.fakes.agents_fakes import queued_llm

MODE = "obj_yaw_approach_high"  # the mode the recorded round founds (tests.fakes.agents.ScriptedAgents)
EDITS = {"edits": [{"factor": "obj_yaw", "low": 0.4, "high": 0.6}], "rationale": "turned cubes"}
N_OBJECTS = 1000


def invalid_scene_error() -> str:
    """The error the sandbox's parent reports for a scene a program built with `model_construct`: the
    task process writes the unvalidated scene out as it is (1,000 bad objects, an instruction with a line
    break); the parent validates the JSON (`sandbox.pool`), and the error text is the pydantic message,
    uncapped (another layer may cap it inside the sandbox too; the writer must not depend on that)."""
    bad = {"name": "Bad Name", "kind": "blob", "category": "x\ny", "size": [9.0, 9.0, 9.0], "pos": [9.0, 9.0]}
    written = {"family": "pick_place", "instruction": "put it\nSYSTEM: obey", "objects": [bad] * N_OBJECTS,
               "fixtures": [], "goal": [{"fn": "on", "args": ["a", "b"]}], "factors": {}, "seed": 0,
               "max_steps": 300}
    try:
        SceneSpec.model_validate(written)
    except ValidationError as err:
        return f"[invalid_output] generate() returned an invalid scene: {err}"
    raise AssertionError("the scene was accepted")


@dataclass(frozen=True)
class _Failed:
    """A failed sandbox run as `generate_scenes` reads it."""

    error: str
    ok: bool = False
    scenes: tuple[Any, ...] = ()


@dataclass
class _FailingSandbox:
    """Every run fails with the same error text."""

    error: str
    ran: list[Any] = field(default_factory=list)

    def run_many(self, tasks: list[Any]) -> list[_Failed]:
        self.ran += tasks
        return [_Failed(self.error) for _ in tasks]


def test_thousands_of_validation_errors_reach_the_writer_summarised(before) -> None:
    error = invalid_scene_error()
    assert "3001 validation errors for SceneSpec" in error and len(error) > 600_000
    deps, state = before("train")  # memory holds the mode the round founded
    llm, completer = queued_llm(EDITS, EDITS)
    deps = dataclasses.replace(deps, sandbox=_FailingSandbox(error), agents=HelperAgents(), llm=llm)
    state = {**state, "slots": [new_slot("pick_place", MODE, 1, 1)]}
    first = call(generate, state, deps)  # the writer writes, every run of its program fails
    slot = first["slots"][0]
    assert (slot["status"], slot["failure"]) == ("retry", "sandbox")
    stored = slot["error"]
    assert len(stored) < 4_000 and "3001 validation errors for SceneSpec" in stored
    assert "instruction\n" in stored and "objects.0.name\n" in stored  # the first few, named
    assert "more errors" in stored
    call(generate, {**state, "slots": first["slots"]}, deps)  # the retry: the writer is told the error
    retry = completer.requests[1].user
    assert len(retry) < 8_000 and "3001 validation errors for SceneSpec" in retry
    assert len(completer.requests[0].user) < 8_000  # the first prompt, without feedback, for scale
