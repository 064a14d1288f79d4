"""`validate`: candidates face the validity checks; a full slot is accepted (with its demonstrations), a
short one retries with the checker's message, and one out of retries fails and is back-filled from the
seed program so the budget stays the same."""

from __future__ import annotations

import json

from agents.graph.nodes.generate import generate, validate
from agents.graph.state import new_slot
from tests.agents.graphkit import call
from tests.fakes.agents import ScriptedAgents

MODE = "obj_yaw_approach_high"


def test_full_slots_are_accepted_with_their_demonstrations(before) -> None:
    deps, state = before("validate")
    update = call(validate, state, deps)
    assert set(update) == {"slots"} and len(update["slots"]) == len(state["slots"])
    for s in update["slots"]:
        assert s["status"] == "accepted" and not s["candidates"]
        assert len(s["accepted"]) == len(s["demos"]) == s["n"] and len(s["held_scenes"]) == s["held"]
        assert all((deps.run.root / d).exists() for d in s["demos"])


def _bad_candidates(deps, state, attempts: int) -> dict:
    """A mode slot whose program puts the object out of reach, generated (attempt `attempts`)."""
    slot = {**new_slot("pick_place", MODE, 1, 1), "status": "retry", "attempts": attempts - 1,
            "error": "x", "failure": "invalid_scenes"}
    return {**state, **generate({**state, "slots": [slot]}, deps)}


def test_a_short_slot_retries_with_the_checkers_message(before) -> None:
    deps, state = before("train", agents=ScriptedAgents(bad_programs=1))
    state = _bad_candidates(deps, state, attempts=1)
    update = call(validate, state, deps)
    slot = update["slots"][0]
    assert (slot["status"], slot["failure"]) == ("retry", "invalid_scenes")
    assert "scenes failed validation" in slot["error"]
    checked = [json.loads(p.read_text()) for p in (deps.run.root / "validity/round_01").glob("*.json")]
    reasons = [row["message"] for row in checked if not row["ok"]]
    assert reasons and any(msg in slot["error"] for msg in reasons)  # the exact checker message
    assert len(update["slots"]) == 1  # a slot with a try left is not back-filled


def test_a_slot_out_of_retries_fails_and_is_backfilled(before) -> None:
    deps, state = before("train", agents=ScriptedAgents(bad_programs=1))
    state = _bad_candidates(deps, state, attempts=deps.config.max_retries + 1)
    update = call(validate, state, deps)
    failed, fill = update["slots"]
    assert failed["status"] == "failed" and "failed validation" in failed["error"]
    assert fill["mode_id"] == "seed" and fill["backfill_for"] == MODE and fill["status"] == "pending"
    assert fill["n"] == failed["n"] - len(failed["accepted"])  # the same budget
    assert fill["held"] == failed["held"] - len(failed["held_scenes"])
