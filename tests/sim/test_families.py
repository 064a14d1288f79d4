"""Registry-wide: every task family builds, resets, steps without NaN, samples factors inside its
ranges (OOD outside the in-distribution ones), and its expert solves fixed seed scenes."""

from __future__ import annotations

import numpy as np
import pytest

from sim.env import SimEnv
from sim.episode import run_episode
from sim.families import FAMILIES, get_family
from sim.scene import FACTOR_GROUPS

NAMES = FAMILIES.names()


def test_all_four_families_are_registered():
    assert {"pick_place", "articulated", "put_inside", "stack_insert"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_builds_resets_and_steps_without_nan(name):
    fam = get_family(name)
    spec = fam.seed_scenes()[0]
    env = SimEnv(spec)
    rng = np.random.default_rng(0)
    for _ in range(2):
        env.reset()
        for _ in range(15):
            env.step(rng.uniform(-1, 1, 7))
        assert not env.has_nan()
    s = env.reset()
    assert fam.phase(spec, s) in fam.phases and not env.success(s)


@pytest.mark.parametrize("name", NAMES)
def test_factor_sampling_respects_ranges(name):
    fam = get_family(name)
    rng = np.random.default_rng(1)
    for _ in range(50):
        for ood in (False, True):
            vals = fam.sample_factors(rng, ood)
            assert set(vals) == set(FACTOR_GROUPS)
            for f in fam.factors:
                v = vals[f.group][f.name]
                assert f.contains(v, ood=ood), (f.name, v)
                if ood and f.has_ood and f.type == "float":
                    assert not f.contains(v, ood=False) or v in f.range, (f.name, v)  # from the OOD shell
    assert fam.make_scene(fam.default_factors(), 0).family == name


@pytest.mark.parametrize("name", NAMES)
def test_expert_solves_seed_scenes(name):
    fam = get_family(name)
    for spec in fam.seed_scenes()[:2]:
        ep = run_episode(spec)
        assert ep.success, f"{name} seed {spec.seed}: failed in phase {ep.failing_phase}"
        assert ep.phases[-1] == "done" and ep.failing_phase is None
        assert set(ep.phases) <= set(fam.phases)
