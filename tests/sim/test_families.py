"""Registry-wide: every task family builds, resets, steps without NaN, samples factors inside its
ranges (OOD outside the in-distribution ones), and its expert solves fixed seed scenes."""

from __future__ import annotations

import numpy as np
import pytest

from sim.env import SimEnv
from sim.episode import run_episode
from sim.families import FAMILIES, get_family, our_families
from sim.scene import FACTOR_GROUPS

NAMES = FAMILIES.names()
# families whose scenes are our MuJoCo world (a LIBERO family's run in LIBERO:
# tests/sim/test_libero_family.py)
OURS = our_families()
# libero_spatial and libero_goal run on LIBERO's machinery as libero_object does, whose cases run here
# (10-50 s each); theirs are slow, covered by `python -m bench.experts --families libero_spatial,libero_goal`
# (the expert on their scenes), `python -m bench.programs` (each seed training program against expert
# demonstrations) and every scene of an `agents.run` with their preset (validated before it is used);
# libero_goal's drawer scene is validated in tests/sim/test_libero_goal_family.py
SLOW_LIBERO = ("libero_spatial", "libero_goal")
HEAVY = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_LIBERO else n for n in NAMES]


def test_all_five_families_are_registered():
    assert {"pick_place", "articulated", "put_inside", "stack_insert", "push"} <= set(NAMES)


@pytest.mark.parametrize("name", OURS)
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


# ---- a family is a folder: everything one folder declares works end to end ---------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_family_folder_holds_scene_builder_training_program_and_phase_table(name):
    fam = get_family(name)
    gen_path, train_path = fam.seed_paths()
    assert gen_path.parent == train_path.parent == fam.folder() and fam.folder().name == name
    assert fam.phases[-1] == "done" and set(fam.phase_stages) <= set(fam.phases)
    for f in fam.factors:  # every factor carries its own facts
        assert f.kind != "other", f"{name}.{f.name}: no kind"


@pytest.mark.parametrize("name", HEAVY)
def test_seed_scenes_pass_every_validity_check(name):
    from sim.validity import check_scene

    fam = get_family(name)
    for spec in fam.seed_scenes()[: 2 if name in OURS else 1]:  # a LIBERO check runs the expert 2–4 times
        report = check_scene(spec)
        assert report.ok, f"{name} seed {spec.seed}: {report.message}"
        assert report.demo is not None and report.demo.success


@pytest.mark.integration
def test_every_family_scene_builder_runs_in_the_sandbox_and_equals_make_scene():
    from programs.seeds import seed_library
    from sandbox import PoolConfig, SandboxPool

    lib = seed_library()
    assert set(lib) == set(NAMES)
    with SandboxPool(PoolConfig(workers=1)) as pool:
        for name in NAMES:
            fam, (gen, _) = get_family(name), lib[name]
            assert gen.factors == fam.factors
            for ood in (False, True):
                values = fam.sample_factors(np.random.default_rng([3, int(ood)]), ood)
                result = pool.run(gen.source, fam.flat(values), seed=0)
                assert result.ok, f"{name}: {result.error}"
                assert result.scenes[0] == fam.make_scene(values, seed=0)


@pytest.mark.parametrize("name", HEAVY)
def test_expert_solves_seed_scenes_and_the_seed_training_program_agrees(name):
    """One test, so the two seed scenes' expert episodes (10-15 s in LIBERO) run once for both checks."""
    from programs.checks import check_training
    from programs.potential import agreement, compile_potential
    from programs.seeds import seed_library

    fam, (_, tp) = get_family(name), seed_library()[name]
    demos = []
    for spec in fam.seed_scenes()[:2]:
        ep = run_episode(spec)
        assert ep.success, f"{name} seed {spec.seed}: failed in phase {ep.failing_phase}"
        assert ep.phases[-1] == "done" and ep.failing_phase is None
        assert set(ep.phases) <= set(fam.phases)
        assert check_training(tp, spec) == []
        assert compile_potential(tp, spec).m == tp.m
        demos.append(ep)
    assert agreement(tp, demos) >= 0.9


def test_copied_fixture_constants_match_the_simulator():
    """Scene builders run in the sandbox, which cannot import `sim.fixtures`: the numbers they copy must
    agree with it."""
    from sim.families.articulated import scene as art
    from sim.families.put_inside import scene as put
    from sim.fixtures import DEFAULTS

    for kind, (width, depth) in art.BASE_SIZE.items():
        assert (width, depth) == (DEFAULTS[kind]["width"], DEFAULTS[kind]["depth"])
    cab = DEFAULTS["cabinet"]
    assert (cab["depth"], cab["travel"], cab["wall"]) == (put.CAB_DEPTH, put.CAB_TRAVEL, put.CAB_WALL)
    assert DEFAULTS["bin"]["wall"] == put.BIN_WALL


def test_bad_factor_input_is_refused_with_every_problem_named():
    fam = get_family("pick_place")
    with pytest.raises(ValueError) as e:
        fam.make_scene({"spatial": {"obj_x": "abc"}, "attribute": {"color": "magenta", "size": float("nan"),
                                                                    "obj_y": 0.0}})
    msg = str(e.value)
    assert "obj_x = 'abc' must be a number (float)" in msg
    assert "color = 'magenta' is not one of its values" in msg
    assert "size = nan must be finite" in msg and "obj_y belongs to group 'spatial', not 'attribute'" in msg
    with pytest.raises(KeyError, match="unknown factor 'obj_xx'"):
        fam.make_scene({"spatial": {"obj_xx": 0.1}})
    far = fam.make_scene({"spatial": {"obj_x": 5.0}})  # outside the OOD range: allowed, validity judges it
    assert far.factors["spatial"]["obj_x"] == 5.0

