"""`generate`: each pending or retrying slot's program → candidate scenes; a retrying slot's writer is told
the last error verbatim, and a writer that fails is counted and retried."""

from __future__ import annotations

import math

from agents.graph.nodes.generate import generate
from agents.graph.state import new_slot
from tests.agents.graphkit import call
from tests.fakes.agents import ScriptedAgents

MODE = "obj_yaw_approach_high"  # the mode the recorded round founds (tests.fakes.agents.ScriptedAgents)
CHECKER = "1 of 2 scenes failed validation:\n- unreachable (1×), e.g.: the object is out of reach"


def test_every_pending_slot_gets_its_candidates(before) -> None:
    deps, state = before("generate")
    update = call(generate, state, deps)
    assert set(update) == {"slots", "programs", "unusable_answers"}
    for s in update["slots"]:
        assert s["status"] == "generated" and s["attempts"] == 1 and not s["error"]
        assert len(s["candidates"]) == math.ceil((s["n"] + s["held"]) * deps.config.oversample)
        assert all((deps.run.root / c).exists() for c in s["candidates"])
    assert update["unusable_answers"] == {"writer": 0}
    assert deps.agents.calls == []  # seed and variant arms are made from templates: no writer


def _retrying(state: dict, error: str, attempts: int = 1) -> dict:
    slot = {**new_slot("pick_place", MODE, 1, 1), "status": "retry", "attempts": attempts, "error": error,
            "failure": "invalid_scenes"}
    return {**state, "slots": [slot]}


def test_a_retrying_slot_writes_again_with_the_checkers_message(before) -> None:
    deps, state = before("train")  # memory holds the mode the round founded
    state = _retrying(state, CHECKER)
    update = call(generate, state, deps)
    assert deps.agents.calls == [("write_generation", CHECKER)]  # the exact error, fed back verbatim
    slot = update["slots"][0]
    assert slot["status"] == "generated" and slot["attempts"] == 2 and slot["program"] in update["programs"]
    assert (deps.run.root / slot["program"]).exists()


def test_a_failing_writer_is_counted_and_retried(before) -> None:
    deps, state = before("train", agents=ScriptedAgents(writer_errors=1))
    update = call(generate, _retrying(state, "", attempts=0), deps)  # the slot's first attempt
    slot = update["slots"][0]
    assert (slot["status"], slot["failure"]) == ("retry", "writer")
    assert "scripted writer failure" in slot["error"]
    assert update["unusable_answers"]["writer"] == 1 and not slot["candidates"]
