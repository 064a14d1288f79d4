"""`remember`: the round's evidence into memory, and a validated diagnosis into a difficulty mode — in
memory (CoDA), or a mode of this round only without memory; a refuted one founds nothing."""

from __future__ import annotations

import json

from agents.graph.nodes.remember import remember
from tests.agents.graphkit import call

MODE = "obj_yaw_approach_high|pick_place"


def test_a_validated_diagnosis_lands_in_memory(before) -> None:
    deps, state = before("remember")
    assert deps.memory.counts()["modes"] == 0
    update = call(remember, state, deps)
    assert update == {"modes": [MODE]}
    counts = deps.memory.counts()
    assert counts["modes"] == 1 and counts["diagnoses"] == 1 and counts["episodes"] == len(state["rollouts"])
    rec = json.loads((deps.run.root / state["diagnoses"][0]).read_text())
    assert rec["mode_id"] == MODE.split("|")[0]  # the file names the mode it founded


def test_without_memory_a_validated_diagnosis_is_a_mode_of_this_round(before) -> None:
    deps, state = before("remember", "critic_no_memory")
    update = call(remember, state, deps)
    assert update == {"modes": [MODE]}
    assert (deps.run.root / "modes" / f"{MODE.split('|')[0]}.json").exists()


def test_a_refuted_diagnosis_founds_no_mode(before) -> None:
    deps, state = before("remember")
    path = deps.run.root / state["diagnoses"][0]
    rec = json.loads(path.read_text())
    rec["verdict"]["status"] = "refuted"
    path.write_text(json.dumps(rec))
    assert call(remember, state, deps) == {"modes": []}
    assert deps.memory.counts()["modes"] == 0
