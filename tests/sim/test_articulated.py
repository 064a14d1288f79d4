"""The articulated family: scenes build and step cleanly, the expert opens/closes drawers and the door,
open-fraction predicates track the joints, and factors stay in their ranges."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.env import SimEnv
from sim.families.articulated import Articulated, hinge_xy
from sim.families.base import FactorValues
from sim.predicates import closed, open_frac, opened
from sim.scene import SceneSpec
from tests.sim.helpers import play_expert


def _scene(seed: int = 0, **over) -> SceneSpec:
    fv: FactorValues = Articulated.default_factors()
    for k, v in over.items():
        fv[Articulated.factor(k).group][k] = v
    return Articulated.make_scene(fv, seed)


def _run_expert(spec: SceneSpec) -> tuple[bool, list[str], str | None]:
    env, _, states = play_expert(Articulated, spec)
    assert not env.has_nan()
    labels, failed = Articulated.label(spec, states)
    return env.success(states[-1]), labels, failed


def test_seed_scene_builds_resets_and_steps_without_nan():
    spec = Articulated.seed_scenes()[0]
    env = SimEnv(spec)
    rng = np.random.default_rng(0)
    for _ in range(2):
        s = env.reset()
        assert Articulated.phase(spec, s) == "approach"
        for _ in range(15):
            env.step(rng.uniform(-1, 1, 7))
        assert not env.has_nan()


@pytest.mark.parametrize("over", [
    dict(target="drawer0", action="open", fix_yaw=0.15),
    dict(target="door", action="open", fix_y=0.04, fix_yaw=-0.1),
    dict(target="drawer1", action="close", init_frac=0.8, fix_x=0.14),
    dict(target="door", action="close", init_frac=0.6),
], ids=["open_drawer", "open_door", "close_drawer", "close_door"])
def test_expert_succeeds(over):
    spec = _scene(3, **over)
    ok, labels, failed = _run_expert(spec)
    assert ok and failed is None and labels[-1] == "done", (spec.instruction, failed)
    verb = "pull" if over["action"] == "open" else "push"
    seen = list(dict.fromkeys(labels))
    assert seen == ["approach", "grasp", verb, "release", "done"]


def test_open_fraction_predicates_follow_the_joint():
    spec = _scene(target="drawer1", action="close", init_frac=0.6)
    s = SimEnv(spec).reset()
    j = "cabinet/drawer1"
    assert open_frac(s, j) == pytest.approx(0.6, abs=1e-6)
    assert opened(s, j, 0.5) and not opened(s, j, 0.75) and not closed(s, j, 0.1)
    assert open_frac(s, "cabinet/drawer0") == 0.0 and closed(s, "cabinet/drawer0", 0.1)
    assert Articulated.label(spec, [s])[1] is not None  # not yet closed: a failure

    door = _scene(target="door", action="close", init_frac=0.5)
    s = SimEnv(door).reset()
    assert open_frac(s, "door/door") == pytest.approx(0.5, abs=1e-6)
    assert float(s.joint_q[s.joint("door/door")]) == pytest.approx(math.pi / 4, abs=1e-6)


def test_door_handle_turns_about_the_computed_hinge():
    radii = []
    for frac in (0.0, 0.5, 1.0):
        spec = _scene(target="door", action="close", init_frac=frac, fix_yaw=0.3, fix_y=0.05)
        s = SimEnv(spec).reset()
        radii.append(np.linalg.norm(s.handle("door/door")[:2] - hinge_xy(spec.fixture("door"))))
    assert np.ptp(radii) < 1e-6


def test_factor_sampling_stays_in_ranges_and_scenes_are_valid():
    rng = np.random.default_rng(1)
    for ood in (False, True):
        for _ in range(60):
            vals = Articulated.sample_factors(rng, ood)
            for f in Articulated.factors:
                v = vals[f.group][f.name]
                assert f.contains(v, ood=ood), (f.name, v)
                if ood and f.has_ood and f.type == "float":  # drawn from the shell outside the ID range
                    assert not f.range[0] < v < f.range[1], (f.name, v)
            spec = Articulated.make_scene(vals)
            f = spec.fixtures[0]
            joint = str(spec.goal[0].args[0])
            assert joint.startswith(f.name + "/") and spec.instruction
            assert bool(f.init) == (spec.goal[0].fn == "closed")
    assert Articulated.sample_scene(5, ood=True) == Articulated.sample_scene(5, ood=True)
