"""The stack_insert family: scenes build and step cleanly, the expert stacks and inserts, factors stay
in their ranges."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from sim.env import SimEnv
from sim.families.base import FAMILIES
from sim.families.stack_insert import BASE, HOLE, PEG, PIECE, StackInsert
from sim.predicates import inserted, stacked
from sim.scene import SceneSpec
from sim.world import WorldState
from tests.sim.helpers import play_expert


def _scene(task: str) -> SceneSpec:
    factors = StackInsert.default_factors()
    factors["task"]["task"] = task
    return StackInsert.make_scene(factors, seed=3)


def test_registered() -> None:
    assert FAMILIES.get("stack_insert") is StackInsert


def test_seed_scenes_build_reset_step_without_nan() -> None:
    rng = np.random.default_rng(0)
    for spec in StackInsert.seed_scenes():
        env = SimEnv(spec)
        env.reset()
        for _ in range(5):
            a = rng.uniform(-1, 1, 7)
            env.step(a)
        assert not env.has_nan(), spec.instruction
        assert not env.success()


@pytest.mark.parametrize(("task", "goal_holds"), [
    ("stack", lambda s: stacked(s, PIECE, BASE)),
    ("insert", lambda s: inserted(s, PEG, HOLE)),
])
def test_expert_succeeds(task: str, goal_holds: Callable[[WorldState], bool]) -> None:
    spec = _scene(task)
    env, _, states = play_expert(StackInsert, spec)
    start, end = states[0], states[-1]
    assert not goal_holds(start)
    assert goal_holds(end)
    assert env.success(end)
    labels, failed = StackInsert.label(spec, states)
    assert failed is None
    seen = [p for i, p in enumerate(labels) if i == 0 or labels[i - 1] != p]
    final = "place" if task == "stack" else "insert"
    for p in ("approach", "grasp", "lift", "transport", "align", final, "done"):
        assert p in seen, (p, seen)
    order = [StackInsert.phases.index(p) for p in seen]
    assert order == sorted(order), seen


@pytest.mark.parametrize("ood", [False, True])
def test_factor_sampling_in_range(ood: bool) -> None:
    by_name = {f.name: f for f in StackInsert.factors}
    for seed in range(200):
        factors = StackInsert.sample_factors(np.random.default_rng(seed), ood=ood)
        for group, values in factors.items():
            for name, v in values.items():
                f = by_name[name]
                assert f.group == group
                assert f.contains(v, ood=ood), (name, v)
                if ood and f.type == "float" and f.has_ood:
                    assert not f.range[0] < v < f.range[1], (name, v)


def test_pieces_never_overlap_the_target() -> None:
    # worst case over the OOD box: the piece at its largest y, the target at its smallest
    f = {x.name: x for x in StackInsert.factors}
    gap = f["base_y"].ood_range[0] - f["piece_y"].ood_range[1]
    block = np.sqrt(2) * (f["block_size"].ood_range[1] + f["base_size"].ood_range[1])
    peg = np.sqrt(2) * (f["peg_size"].ood_range[1] + 0.05)  # the hole block is 10 cm square
    assert gap > block and gap > peg


def test_scene_is_deterministic_and_names_its_colours() -> None:
    a, b = StackInsert.sample_scene(7, ood=True), StackInsert.sample_scene(7, ood=True)
    assert a.scene_id == b.scene_id
    for task in ("stack", "insert"):
        spec = _scene(task)
        v = StackInsert.flat(spec.factors)
        assert v["color"] in spec.instruction and v["base_color"] in spec.instruction
