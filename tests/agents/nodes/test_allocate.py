"""`allocate`: every method gives each family the same generation budget, split over its arms as the
config says; only the arms differ."""

from __future__ import annotations

import dataclasses

import pytest

from agents.config import METHODS
from agents.graph.nodes.allocate import allocate, split_budget
from tests.agents.graphkit import call

PER_ROUND = {"rollouts", "rollout_failures", "diagnoses", "critic_failures", "unusable_answers", "modes",
             "programs", "compiled", "train_metrics", "measured", "cost"}


@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_gets_the_same_budget_split_over_its_arms(before, method: str) -> None:
    deps, state = before("allocate", method)
    update = call(allocate, state, deps)
    assert set(update) == {"round", "slots", "mode_programs"} | PER_ROUND
    assert update["round"] == 1 and not any(update[k] for k in PER_ROUND)
    cfg, m, slots = deps.config, METHODS.get(method), update["slots"]
    assert sum(s["n"] for s in slots) == cfg.budget  # the same budget for every method
    assert {s["family"] for s in slots} == {"pick_place"} and len(slots) <= cfg.max_arms
    assert all(s["status"] == "pending" and s["held"] == cfg.held and s["program"] for s in slots)
    arms = [s["mode_id"] for s in slots]
    if m.generator == "seed":
        assert arms == ["seed"]
    elif m.generator == "domain_randomization":
        assert arms == ["dr"]
    elif m.generator in ("critic", "memory"):  # no mode yet: the seed arm (if kept), then exploration
        assert arms[0] == "seed" if m.seed_arm else "seed" not in arms
        assert all(a.startswith("var_") for a in arms[1:])
    else:
        assert all(a.startswith("var_") or a == "seed" for a in arms)
    # nothing measured yet: every arm weighs the same, so the budget is split evenly (largest remainder)
    assert [s["n"] for s in slots] == list(split_budget(cfg.budget, dict.fromkeys(arms, 1.0)).values())
    for s in slots:  # an arm that is not the seed's is remembered with its programs
        if s["mode_id"] != "seed":
            assert update["mode_programs"][f"{s['mode_id']}|pick_place"] == [s["program"], s["train_program"]]


def test_learnability_keeps_the_measured_variants_the_policy_sometimes_solves(before) -> None:
    deps, state = before("allocate", "learnability", max_arms=3, budget=12)
    first = call(allocate, state, deps)
    arms = [s["mode_id"] for s in first["slots"]]
    assert len(arms) == deps.config.max_arms == 3 and all(a.startswith("var_") for a in arms)
    for mode, p in zip(arms, (0.5, 0.2, 1.0), strict=True):  # measured after round 1's training
        deps.ledger.record(mode, "pick_place", 1, p, n=4)
    second = call(allocate, {**state, **first}, deps)
    kept = [s for s in second["slots"] if s["mode_id"] in arms]
    fresh = [s for s in second["slots"] if s["mode_id"] not in arms]
    # the two learnable ones stay (the always-solved one goes), most learnable first; one fresh variant
    assert [s["mode_id"] for s in kept] == arms[:2]
    assert len(fresh) == 1 and fresh[0]["mode_id"].startswith("var_")
    assert sum(s["n"] for s in second["slots"]) == deps.config.budget
    assert kept[0]["n"] >= kept[1]["n"]  # budget by p(1 − p): 0.25 against 0.16


@pytest.mark.parametrize("method, even", [("coda", False), ("coda_even_allocation", True)])
def test_the_allocation_link_splits_by_progress_or_evenly(before, method: str, even: bool) -> None:
    deps, state = before("allocate", method, max_arms=3, budget=12)
    for r in (0, 1):  # the seed arm made no progress: learning progress gives it the least
        deps.ledger.record("seed", "pick_place", r, 0.5, n=4)
    counts = [s["n"] for s in call(allocate, state, deps)["slots"]]
    assert sum(counts) == 12 and len(counts) == 3
    assert (max(counts) - min(counts) <= 1) == even


@pytest.mark.parametrize("method, composed", [("coda", True), ("coda_no_compose", False)])
def test_the_composition_link_can_be_turned_off(before, monkeypatch, method: str, composed: bool) -> None:
    import agents.graph.nodes.allocate as alloc

    asked = []
    monkeypatch.setattr(alloc, "_composite_arm", lambda *a, **k: asked.append(a) or None)
    deps, state = before("allocate", method)
    call(allocate, state, deps)
    assert bool(asked) == composed


@pytest.mark.parametrize("method", ["coda", "critic_no_memory"])
def test_the_base_arm_can_draw_from_domain_randomization(before, method: str) -> None:
    """`RunConfig.base_arm` "dr": the diagnosis-driven methods' base arm is domain randomization's (every
    range widened), not the seed distribution; the rest of the arms and the budget are as before."""
    seed_deps, state = before("allocate", method)
    dr_deps, _ = before("allocate", method, base_arm="dr")
    seeded, widened = call(allocate, state, seed_deps)["slots"], call(allocate, state, dr_deps)["slots"]
    assert [s["mode_id"] for s in seeded][0] == "seed" and [s["mode_id"] for s in widened][0] == "dr"
    assert [s["mode_id"] for s in seeded][1:] == [s["mode_id"] for s in widened][1:]
    assert [s["n"] for s in seeded] == [s["n"] for s in widened]
    program = (dr_deps.run.root / widened[0]["program"]).read_text()
    assert "domain randomization" in program
    with pytest.raises(ValueError, match="base_arm"):
        dataclasses.replace(seed_deps.config, base_arm="ood")


def test_a_variant_that_moves_every_factor_has_an_id_short_enough_to_name_a_file() -> None:
    """A variant's id names its scene files; moving every factor of a family (`variant_factors` 14) once
    made one of 270 characters and the run stopped on the file system's limit."""
    from agents.graph.nodes.arms import VARIANT_ID_MAX, variant_id

    assert variant_id([("obj_x", "low"), ("shape", "block")]) == "var_obj_x_low__shape_block"  # as before
    every = [(f"factor_{i}", "high") for i in range(14)]
    other = [*every[:-1], ("factor_13", "low")]
    assert len(variant_id(every)) == VARIANT_ID_MAX and variant_id(every).startswith("var_factor_0_high__")
    assert variant_id(every) != variant_id(other) and variant_id(every) == variant_id(list(every))


@pytest.mark.parametrize("method", ["uniform", "coda"])
def test_generated_arms_can_lie_on_domain_randomization(before, method: str) -> None:
    """`RunConfig.background` "dr": a generated arm moves the same factors to the same values as on the seed
    background, and draws every other factor from domain randomization's widened range; the base arm is
    the background itself, the budget is as before, and a generated arm's edits, measured against its
    background, are its moves alone."""
    from agents.graph.nodes.arms import load_program, mode_edits
    from programs.seeds import background_program

    seed_deps, state = before("allocate", method, variant_factors=2)
    dr_deps, _ = before("allocate", method, variant_factors=2, background="dr")
    on_seed, on_dr = call(allocate, state, seed_deps)["slots"], call(allocate, state, dr_deps)["slots"]
    assert [s["n"] for s in on_seed] == [s["n"] for s in on_dr]
    assert [s["mode_id"] for s in on_seed][1:] == [s["mode_id"] for s in on_dr][1:]
    seed, widened = background_program("pick_place"), background_program("pick_place", "dr", 0.5)
    variants = [(a, b) for a, b in zip(on_seed, on_dr, strict=True) if a["mode_id"].startswith("var_")]
    assert variants
    for a, b in variants:
        plain, wide = load_program(seed_deps, a["program"]), load_program(dr_deps, b["program"])
        moved = mode_edits(plain, seed, seed, allow_ood=True)
        assert len(moved) == 2 and mode_edits(wide, widened, widened, allow_ood=True) == moved
        for f in wide.factors:
            expected = plain.factor(f.name) if f.name in moved else widened.factor(f.name)
            assert (f.range, f.choices) == (expected.range, expected.choices), f.name
        assert any(f.range != seed.factor(f.name).range for f in wide.factors if f.name not in moved)
    if method == "coda":  # the base arm is the background itself
        assert on_seed[0]["mode_id"] == "seed" and on_dr[0]["mode_id"] == "dr"
        assert load_program(dr_deps, on_dr[0]["program"]).factors == widened.factors
    with pytest.raises(ValueError, match="background"):
        dataclasses.replace(seed_deps.config, background="ood")
