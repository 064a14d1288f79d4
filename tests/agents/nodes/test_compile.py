"""`compile`: each validated (mode, family) without programs gets a generation and training program pair,
written to the run directory and indexed in procedural memory; a pair already there is not written again."""

from __future__ import annotations

from agents.graph.nodes.remember import compile_programs
from tests.agents.graphkit import call, files

MODE = "obj_yaw_approach_high"


def test_a_validated_mode_gets_a_program_pair(before) -> None:
    deps, state = before("compile")
    assert state["modes"] == [f"{MODE}|pick_place"]
    update = call(compile_programs, state, deps)
    assert set(update) == {"mode_programs", "programs", "compiled", "unusable_answers"}
    gen, train = update["mode_programs"][f"{MODE}|pick_place"]
    assert gen.startswith(f"programs/round_01/gen_{MODE}_")
    assert train.startswith(f"programs/round_01/train_{MODE}_")
    assert files(deps.run.root, f"programs/round_01/gen_{MODE}_*.py")
    assert files(deps.run.root, f"programs/round_01/train_{MODE}_*.py")
    assert {gen, train} <= set(update["programs"]) and set(state["programs"]) <= set(update["programs"])
    (info,) = update["compiled"]
    assert (info["mode"], info["generation"], info["training"]) == (MODE, gen, train)
    assert info["generation_errors"] == info["writer_errors"] == update["unusable_answers"]["writer"] == 0
    assert deps.memory.counts()["programs"] == 1
    # the generation writer recreates what verification confirmed: it gets the validated diagnosis
    assert [d.factor for d in deps.agents.generation_diagnoses] == ["obj_yaw"]
    assert [kind for kind, _ in deps.agents.calls] == ["write_training", "write_generation"]


def test_a_mode_with_programs_is_not_compiled_again(before) -> None:
    deps, state = before("compile")
    first = call(compile_programs, state, deps)
    again = call(compile_programs, {**state, **first}, deps)
    assert again["compiled"] == [] and len(deps.agents.calls) == 2
