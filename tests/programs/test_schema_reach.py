"""Every generator reaches the whole schema a family declares (issue #39): exploration variants, domain
randomization, the critic's edits and the writers may use every value, the unseen choices the `ood` split
draws included; verification controls stay among the values the policy was trained on."""

from __future__ import annotations

import numpy as np
import pytest

from agents.graph.nodes.arms import editable_factors
from programs.factor_space import movable, seen_movable, variant_sides
from programs.seeds import dr_program, seed_generation
from sim.families import get_family, our_families


@pytest.mark.parametrize("family", our_families())
def test_every_factor_with_two_declared_values_is_within_reach(family: str) -> None:
    fam = get_family(family)

    def declared(f):  # the values (choices) or the bounds (numbers) the schema declares
        if f.type == "choice":
            return {*(f.choices or ()), *(f.ood_choices or ())}
        return {*(f.ood_range or f.range)}

    unreachable = [f.name for f in fam.factors if not movable(f)]
    assert unreachable == [f.name for f in fam.factors if len(declared(f)) < 2]  # one value: stays put
    assert {f.name for f in editable_factors(seed_generation(family))} == {
        f.name for f in fam.factors if movable(f)}


def test_pick_place_s_unseen_targets_and_paraphrases_are_reachable_but_not_controls() -> None:
    fam = get_family("pick_place")
    target, paraphrase, template = (fam.factor(n) for n in ("target", "paraphrase", "template"))
    assert movable(target) and movable(paraphrase) and movable(template)
    assert not seen_movable(target) and not seen_movable(paraphrase)  # one seen value: no matched control
    assert set(variant_sides(target)) == set(target.ood_choices)


def test_domain_randomization_draws_every_declared_choice() -> None:
    base = seed_generation("pick_place")
    dr = dr_program(base, 0.5)
    for f in base.factors:
        if f.type == "choice":
            assert set(dr.factor(f.name).choices) == {*f.choices, *(f.ood_choices or ())}
    fam = get_family("pick_place")
    rng = np.random.default_rng(0)
    drawn = {dr.factor("target").sample(rng) for _ in range(200)}
    assert drawn == {*fam.factor("target").choices, *fam.factor("target").ood_choices}


def test_edits_of_a_point_range_factor_move_off_the_point():
    """The extension's point-range factors (seed distribution: the default): variants move them only
    where their OOD part lies, domain randomization widens them into it, edits are measured in its width,
    and carrying an edit to another family keeps the value (the factor is the same everywhere)."""
    from programs.factor_space import (
        band_edit,
        magnitude,
        mapped_value,
        side_edit,
        variant_edit,
        variant_sides,
        widened_range,
    )
    from sim.families import get_family

    count = get_family("pick_place").factor("distractor_count")
    grip = get_family("pick_place").factor("gripper_init")  # (1, 1); OOD part below only
    assert variant_sides(count) == ["high"] and variant_sides(grip) == ["low"]
    assert variant_edit(count, "high") == (2, 4)
    assert widened_range(count, 0.5) == (0, 2) and widened_range(grip, 0.5) == (0.5, 1.0)
    height = get_family("stack_insert").factor("table_height")
    lo, hi = band_edit(height, 0.05, 1, band=0.1, allow_ood=True)
    assert lo <= 0.05 < hi and hi - lo > 0.01
    assert side_edit(height, "high", [], band=0.25, allow_ood=True) == (0.0, 0.04)
    assert magnitude(height, 0.04) == (1.5, 0.0)
    assert mapped_value(count, (2, 4), get_family("articulated").factor("distractor_count"),
                        allow_ood=True) == (2, 4)


@pytest.mark.parametrize("family", our_families())
def test_a_variant_never_pins_a_libero_suites_task_and_draws_from_every_other_factor(family: str) -> None:
    """FINDINGS #57: a variant that pinned which LIBERO task a scene is spent its round's scenes on one
    item; the LIBERO families' `task` has `variant_pins` off. Every other factor of every family keeps its
    sides, so the core families' variants are drawn as before."""
    seed = seed_generation(family)
    unpinned = [f.name for f in editable_factors(seed) if not variant_sides(f)]
    assert unpinned == (["task"] if family.startswith("libero") else [])
    if family.startswith("libero"):
        task = seed.factor("task")
        assert not task.variant_pins and not task.ood_choices and len(task.choices) >= 7
        assert "variant_pins" in seed.source  # the program text carries it (FACTORS literal)
