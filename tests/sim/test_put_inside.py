"""The put_inside family: scenes build and step cleanly, the expert puts the object in a bin, a bowl and
an open drawer, and factors stay in their ranges."""

from __future__ import annotations

import numpy as np
import pytest

from sim.env import SimEnv
from sim.families.base import FAMILIES
from sim.families.put_inside import BOWLS, PutInside, bowl_scale
from sim.predicates import inside
from sim.scene import SceneSpec
from tests.sim.helpers import play_expert


def _scene(container: str, seed: int = 3) -> SceneSpec:
    factors = PutInside.default_factors()
    factors["task"]["container"] = container
    return PutInside.make_scene(factors, seed=seed)


def test_registered() -> None:
    assert FAMILIES.get("put_inside") is PutInside


def test_seed_scene_builds_resets_steps_without_nan() -> None:
    spec = PutInside.seed_scenes()[0]
    env = SimEnv(spec)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(10):
        env.step(rng.uniform(-1, 1, 7))
    assert not env.has_nan()
    assert not env.success()


@pytest.mark.parametrize(("container", "goal"), [
    ("bin", "bin"), ("black_bowl", "bowl"), ("drawer", "cabinet/drawer0"),
])
def test_expert_puts_object_inside(container: str, goal: str) -> None:
    spec = _scene(container)
    assert PutInside.container(spec) == goal
    env, expert, states = play_expert(PutInside, spec)
    assert not inside(states[0], "object", goal)
    s = states[-1]
    assert not env.has_nan()
    assert env.success(s), (container, expert.phase)
    assert inside(s, "object", goal)
    labels, failed = PutInside.label(spec, states)
    assert failed is None and labels[-1] == "done" and labels[0] == "approach"


@pytest.mark.parametrize("ood", [False, True])
def test_factor_sampling_stays_in_range(ood: bool) -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        factors = PutInside.sample_factors(rng, ood=ood)
        for f in PutInside.factors:
            assert f.contains(factors[f.group][f.name], ood=ood), (f.name, factors[f.group][f.name])
    assert {PutInside.sample_factors(np.random.default_rng(k), ood=True)["task"]["container"]
            for k in range(40)} == {"drawer", "white_bowl"}


def test_scenes_are_deterministic_and_bowls_fit() -> None:
    assert PutInside.sample_scene(5, ood=True) == PutInside.sample_scene(5, ood=True)
    spec = _scene("white_bowl")
    obj = spec.object("object")
    assert spec.object("bowl").size[0] >= bowl_scale(BOWLS["white_bowl"], obj, 0.5)
    assert "white bowl" in spec.instruction
