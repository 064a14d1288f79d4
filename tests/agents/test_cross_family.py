"""Cross-family reuse is done, not just counted: a difficulty mode founded on pick-place's `obj_x` reaches
stack/insert (whose factor of that meaning is `piece_x`), its stored pick-place program is adapted to the
stack/insert seed program by meaning and value, and the reuse is recorded only because the adapted program
produced accepted scenes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.graph.deps import open_deps
from agents.graph.nodes.arms import load_program, save_program, seed_training
from memory.types import Diagnosis, Verdict
from programs.edits import edit
from programs.errors import ProgramRejected
from programs.factor_space import adapted_edits, mapped_value
from programs.seeds import seed_generation, seed_library
from tests.agents.graphkit import config, run_graph
from tests.fakes.agents import ScriptedAgents
from tests.fakes.trainer import FakeTrainer

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

LIB = seed_library()


def test_edits_carry_over_by_meaning_and_relative_place():
    pp, si = LIB["pick_place"][0], LIB["stack_insert"][0]
    far = edit(pp, "obj_x", (0.08, 0.12), mode_id="m")  # the top quarter of pick-place's ID range
    assert adapted_edits(far, pp, si) == {"piece_x": (0.085, 0.12)}  # the top quarter of stack/insert's
    pi_shape = LIB["put_inside"][0].factor("shape")
    assert mapped_value(pp.factor("shape"), ("cylinder",), pi_shape) == ("cylinder",)
    with pytest.raises(ProgramRejected, match="carries over"):
        adapted_edits(edit(pp, "friction", (0.8, 0.9), mode_id="m"), pp, LIB["articulated"][0])


def test_a_pick_place_mode_is_adapted_for_stack_insert_and_its_reuse_counted(tmp_path: Path):
    cfg = config("coda", families=("stack_insert",), max_arms=2)
    with open_deps(cfg, tmp_path / "run", trainer=FakeTrainer(-1.0), agents=ScriptedAgents()) as deps:
        d = Diagnosis(episode_id="e1", factor_group="spatial", factor="obj_x", phase="approach", side="high",
                      edit={"obj_x": (0.08, 0.12)}, explanation="the object is far out")
        v = Verdict(diagnosis_id=d.id, status="validated", targeted_failure_rate=0.9,
                    control_failure_rate=0.1, statistic=0.8, p_value=0.01, n=10)
        mode = deps.memory.add_validated(d, v, "pick_place", round_no=0)
        gen = edit(seed_generation("pick_place"), "obj_x", (0.08, 0.12), mode_id=mode.id)
        gen_rel, train_rel = save_program(deps, gen, 0), save_program(deps, seed_training("pick_place"), 0)
        entry = deps.memory.add_programs(mode.id, gen.id, seed_training("pick_place").id, "pick_place",
                                         (gen_rel[:-5] + ".py", train_rel[:-5] + ".py"), round_no=0)
        final = run_graph(deps)
        slots = [s for s in final["slots"] if s["mode_id"] == mode.id]
        assert slots and slots[0]["template"] == entry.id and slots[0]["adapted"] and slots[0]["accepted"]
        program = load_program(deps, slots[0]["program"])
        assert program.family == "stack_insert" and program.factor("piece_x").range == (0.085, 0.12)
        assert "adapted from the pick_place program" in (program.diagnosis or "")
        assert deps.memory.reuse_stats()["by_pair"] == {"pick_place->stack_insert": 1}


def test_a_choice_mode_reaches_another_family_only_with_a_value_it_can_take():
    """Seen in a CoDA cell of Table 1: put-inside's `container` = drawer was offered to stack/insert,
    whose task-kind factor (`task`) has no such value, and the writer could only fail (a back-filled slot)."""
    from agents.graph.nodes.allocate import _carries
    from memory.types import DifficultyMode

    container = DifficultyMode(id="container_approach", description="drawer containers", factor_group="task",
                               factor="container", phase="approach", side="values", values=('"drawer"',),
                               families=("put_inside",))
    lib = seed_library()
    assert _carries(container, lib["put_inside"][0])
    assert not _carries(container, lib["stack_insert"][0])
    position = DifficultyMode(id="obj_x_approach", description="far objects", factor_group="spatial",
                              factor="obj_x", phase="approach", side="high", families=("pick_place",))
    assert _carries(position, lib["stack_insert"][0])  # obj_x → piece_x, by meaning


def _stored_mode(deps, family: str, factor: str, value, side: str, phase: str = "approach"):
    d = Diagnosis(episode_id=f"e_{factor}", factor_group="spatial", factor=factor, phase=phase, side=side,
                  edit={factor: value}, explanation=f"{factor} is hard")
    v = Verdict(diagnosis_id=d.id, status="validated", targeted_failure_rate=0.9, control_failure_rate=0.1,
                statistic=0.8, p_value=0.01, n=12)
    mode = deps.memory.add_validated(d, v, family, round_no=0)
    gen = edit(seed_generation(family), factor, value, mode_id=mode.id)
    gen_rel, train_rel = save_program(deps, gen, 0), save_program(deps, seed_training(family), 0)
    deps.memory.add_programs(mode.id, gen.id, seed_training(family).id, family,
                             (gen_rel[:-5] + ".py", train_rel[:-5] + ".py"), round_no=0)
    return mode


@pytest.mark.parametrize("compose", [True, False])
def test_memory_composes_modes_from_two_families_into_one_program(tmp_path: Path, compose: bool):
    """Two stored modes reach pick-place — its own `obj_yaw` and stack/insert's `piece_x` (pick-place's
    `obj_x` by meaning) — and CoDA's round leads with one program that holds both difficulties."""
    cfg = config("coda", families=("pick_place",), max_arms=3, budget=3, compose=compose)
    with open_deps(cfg, tmp_path / "run", trainer=FakeTrainer(-1.0), agents=ScriptedAgents()) as deps:
        yaw = _stored_mode(deps, "pick_place", "obj_yaw", (-1.5, -1.05), "low")
        far = _stored_mode(deps, "stack_insert", "piece_x", (0.085, 0.12), "high")
        final = run_graph(deps)
        arms = {s["mode_id"] for s in final["slots"]}
        mixes = [s for s in final["slots"] if s["mode_id"].startswith("mix_")]
        if not compose:
            assert not mixes and {yaw.id, far.id} <= arms
            return
        assert len(mixes) == 1 and mixes[0]["accepted"] and mixes[0]["status"] == "accepted"
        program = load_program(deps, mixes[0]["program"])
        assert program.factor("obj_yaw").range == (-1.5, -1.05)
        assert program.factor("obj_x").range == (0.08, 0.12)  # stack/insert's top quarter, carried over
        moved = {f.name for f in program.factors
                 if f.range != seed_generation("pick_place").factor(f.name).range}
        assert moved == {"obj_yaw", "obj_x"}
        assert yaw.id in program.diagnosis and far.id in program.diagnosis
        assert arms in ({"seed", mixes[0]["mode_id"], yaw.id}, {"seed", mixes[0]["mode_id"], far.id})
        # a composite is made from templates: never handed to the writer, counted as budget on modes
        from agents.graph.nodes.arms import template_made
        from experiments.table.stats import mode_budget_share

        assert template_made(mixes[0]["mode_id"])
        assert mode_budget_share({"memory_per_round": {"1": {"arms": [
            f"{s['mode_id']}|pick_place×{s['n']}" for s in final["slots"]]}}}) > 0


@pytest.mark.parametrize("method", ["coda", "coda_no_seed_arm"])
def test_without_the_seed_arm_the_budget_goes_to_modes_and_exploration(tmp_path: Path, method: str):
    """`MethodConfig.seed_arm` off: no slot on the seed distribution, and the family's whole budget is spent
    on its stored mode and exploration variants (the equal-budget rule still holds)."""
    cfg = config(method, families=("pick_place",), max_arms=3, budget=3)
    with open_deps(cfg, tmp_path / "run", trainer=FakeTrainer(-1.0), agents=ScriptedAgents()) as deps:
        yaw = _stored_mode(deps, "pick_place", "obj_yaw", (-1.5, -1.05), "low")
        final = run_graph(deps)
        n = {s["mode_id"]: s["n"] for s in final["slots"]}
        assert sum(n.values()) == 3 and yaw.id in n and len(n) == 3
        variants = [m for m in n if m.startswith("var_")]
        if method == "coda":
            assert "seed" in n and len(variants) == 1
        else:
            assert "seed" not in n and len(variants) == 2


def test_the_seed_arm_option_belongs_to_the_diagnosis_driven_generators():
    from agents.config import MethodConfig

    with pytest.raises(ValueError, match="seed_arm=False"):
        MethodConfig(generator="uniform", update="sft", seed_arm=False)
    assert not MethodConfig(generator="critic", diagnose=True, seed_arm=False).seed_arm
