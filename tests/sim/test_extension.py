"""The extended factor space (`sim.extension`, issue #39 item 4): the core space unchanged, the extended
one about three times the factors, its defaults the core scene, and every extended factor acting on the
built MuJoCo scene or the episode as declared."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from sim.env import SimEnv
from sim.episode import run_episode
from sim.extension import EXTENSION, EXTENSION_NAMES
from sim.families import get_family
from sim.families.phases import PICK_AND_PLACE
from sim.scene import FACTOR_GROUPS, SceneSpec
from sim.validity import check_scene

OURS = ("pick_place", "articulated", "put_inside", "stack_insert", "push")
# each family's scenes before the extension existed (commit 2635c8c): sample_scene(11), sample_scene(12, ood)
CORE_SCENE_IDS = {"pick_place": ("0f7216c798d4", "4098fe22bb17"),
                  "articulated": ("a5eef88ac377", "e4a2d5432161"),
                  "put_inside": ("44f10a12cdaa", "3912ae00ed2c"),
                  "stack_insert": ("6e9ccf9a641b", "f9abae29573f"),
                  "push": ("9be6f11f9c85", "8e6f9c09be58")}
SUITES = Path(__file__).resolve().parents[2] / "experiments" / "table"


def _scene(family: str, seed: int = 4, **values: object) -> SceneSpec:
    """The family's default extended scene with `values` set."""
    fam = get_family(family)
    factors = fam.default_factors("extended")
    for name, v in values.items():
        factors[fam.factor(name).group][name] = v
    return fam.make_scene(factors, seed)


def _bare(spec: SceneSpec) -> str:
    return spec.model_dump_json(exclude={"factors"})


@pytest.mark.parametrize("family", OURS)
def test_core_scenes_are_those_before_the_extension(family):
    fam = get_family(family)
    assert (fam.sample_scene(11).scene_id, fam.sample_scene(12, ood=True).scene_id) == CORE_SCENE_IDS[family]
    assert fam.schema() == fam.factors and fam.default_factors() == fam.default_factors("core")


def test_frozen_suite_scenes_load_without_conditions():
    files = sorted(SUITES.glob("suites*/*/*/*.json"))
    assert files
    for path in files:
        text = path.read_text()
        scene = SceneSpec.from_json(text)
        assert scene.conditions is None and "conditions" not in scene.model_dump_json()
        if '"libero"' in text:  # written with every field this model had before: read back as written
            assert scene.to_json().strip() == text.strip(), path


@pytest.mark.parametrize("family", OURS)
def test_the_extended_schema_is_about_three_times_the_core(family):
    fam = get_family(family)
    ext = fam.schema("extended")
    assert [f.name for f in ext[: len(fam.factors)]] == [f.name for f in fam.factors]
    assert len(ext) == len(fam.factors) + len(EXTENSION) and 2.5 <= len(ext) / len(fam.factors) <= 3.5
    assert not {f.name for f in fam.factors} & EXTENSION_NAMES
    for f in fam.extension:
        assert f.group in FACTOR_GROUPS and f.kind != "other" and f.contains(f.default)
        assert f.has_ood, f"{f.name}: no OOD values"


def test_libero_families_have_no_extension():
    assert get_family("libero_object").schema("extended") == get_family("libero_object").factors


def test_every_extended_kind_has_a_relevance_row():
    rows = {k for p in PICK_AND_PLACE for k in p.relevance}
    assert {f["kind"] for f in EXTENSION} <= rows | {"appearance", "mass"}


@pytest.mark.parametrize("family", OURS)
def test_extended_defaults_build_the_core_scene(family):
    fam = get_family(family)
    rng = np.random.default_rng(5)
    for _ in range(3):
        core = fam.sample_factors(rng)
        ext = fam.default_factors("extended")
        for g in FACTOR_GROUPS:
            ext[g].update(core[g])
        a, b = fam.make_scene(core, 9), fam.make_scene(ext, 9)
        assert _bare(a) == _bare(b) and b.conditions is None
        assert fam.space_of(ext) == "extended" and fam.space_of(core) == "core"


def test_sampling_the_extended_space_draws_the_core_values_first():
    fam = get_family("pick_place")
    core = fam.sample_factors(np.random.default_rng(3))
    ext = fam.sample_factors(np.random.default_rng(3), space="extended")
    assert all(ext[g][k] == v for g in FACTOR_GROUPS for k, v in core[g].items())
    assert set(fam.flat(ext)) == {f.name for f in fam.schema("extended")}


# one extended factor at a time away from its default, with one distractor, obstacle and clutter disc in
# the scene so that their own factors have something to act on
LIVE = {"distractor_count": 1, "obstacle_count": 1, "clutter_count": 1}


@pytest.mark.parametrize("name", sorted(EXTENSION_NAMES))
def test_every_extended_factor_changes_the_scene(name):
    fam = get_family("pick_place")
    f = fam.factor(name)
    base = {**LIVE}
    other = next(c for c in (*f.choices, *f.ood_choices) if c != f.default) if f.type == "choice" else (
        f.ood_range[1] if f.ood_range[1] != f.default else f.ood_range[0])
    if f.type == "int":
        other = int(other)
    base.pop(name, None)
    a, b = _scene("pick_place", **base), _scene("pick_place", **{**base, name: other})
    assert _bare(a) != _bare(b), f"{name} = {other!r} left the scene as it was"


def test_distractors_obstacles_and_clutter_are_objects_clear_of_the_task():
    spec = _scene("pick_place", distractor_count=2, obstacle_count=1, clutter_count=3)
    names = [o.name for o in spec.objects]
    assert names == ["object", "target", "obstacle0", "distractor0", "distractor1", "clutter0", "clutter1",
                     "clutter2"]
    env = SimEnv(spec)
    env.reset()
    assert env.model.nbody > SimEnv(get_family("pick_place").make_scene({}, 4)).model.nbody
    report = check_scene(spec, solve=False)
    assert report.ok, report.message


def test_distractors_stand_near_or_far_from_the_object_as_asked():
    def gap(dist: float) -> float:
        spec = _scene("pick_place", distractor_count=1, distractor_dist=dist)
        return float(np.hypot(*np.subtract(spec.object("distractor0").pos, spec.object("object").pos)))

    assert gap(0.03) < 0.12 < gap(0.25)


def test_a_twin_distractor_looks_like_the_object():
    spec = _scene("pick_place", distractor_count=1, distractor_kind="twin", distractor_color="match")
    d, o = spec.object("distractor0"), spec.object("object")
    assert (d.kind, d.size, d.rgba, d.category) == (o.kind, o.size, o.rgba, o.category)


def test_table_height_damping_friction_and_colour_reach_the_model():
    plain, spec = SimEnv(_scene("push")), SimEnv(_scene("push", table_height=0.05, damping=0.3,
                                                       table_friction=0.5, table_color="dark"))
    for env in (plain, spec):
        env.reset()
    base = mujoco.mj_name2id(spec.model, mujoco.mjtObj.mjOBJ_BODY, "robot_base")
    assert spec.data.xpos[base][2] == pytest.approx(plain.data.xpos[base][2] - 0.05)
    table = spec.model.geom("table").id
    assert spec.model.geom_friction[table][0] == 0.5 and plain.model.geom_friction[table][0] == 1.0
    assert not np.allclose(spec.model.geom_rgba[table], plain.model.geom_rgba[table])
    obj_dof = spec.model.jnt_dofadr[spec.model.body_jntadr[spec.index.object_body[0]]]
    assert spec.model.dof_damping[obj_dof] == 0.3 and plain.model.dof_damping[obj_dof] == 0.0


def test_the_arm_starts_where_the_offset_says():
    plain = SimEnv(_scene("pick_place"))
    moved = SimEnv(_scene("pick_place", ee_x=0.05, ee_y=-0.04, ee_z=-0.06, gripper_init=0.2))
    a, b = plain.reset(), moved.reset()
    assert np.allclose(b.ee_pos - a.ee_pos, (0.05, -0.04, -0.06), atol=2e-3)
    assert np.allclose(b.ee_mat, a.ee_mat, atol=1e-2)
    assert b.gripper < a.gripper / 2


def test_action_noise_moves_the_same_actions_elsewhere_deterministically():
    still = np.zeros((30, 7))
    runs = [run_episode(_scene("pick_place", action_noise=n), lambda obs: still, max_steps=30) for n in
            (0.0, 0.1, 0.1)]
    ends = [ep.states[-1].ee_pos for ep in runs]
    assert not np.allclose(ends[0], ends[1], atol=1e-3) and np.array_equal(ends[1], ends[2])


class Watcher:
    """A policy that moves the gripper along x, one step a call, and keeps the positions it was shown."""

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []
        self.ee: list[np.ndarray] = []

    def __call__(self, obs):
        self.seen.append(obs.state.obj_pos.copy())
        self.ee.append(obs.state.ee_pos.copy())
        return np.array([[0.5, 0, 0, 0, 0, 0, -1.0]])


def test_the_policy_reads_a_noisy_lagging_state_and_the_expert_the_true_one():
    runs = []
    for values in ({}, {"obs_noise": 0.01}, {"obs_noise": 0.01}, {"obs_delay": 3}):
        w = Watcher()
        runs.append((w, run_episode(_scene("pick_place", **values), w, max_steps=8)))
    (clean, ep0), (noisy, ep1), (again, _), (late, ep3) = runs
    assert all(np.array_equal(clean.seen[k], ep0.states[k].obj_pos) for k in range(8))
    assert not np.allclose(noisy.seen[1], ep1.states[1].obj_pos, atol=1e-3)  # what it read, not the world
    assert all(np.array_equal(a, b) for a, b in zip(noisy.seen, again.seen, strict=True))  # the same per seed
    assert np.array_equal(ep0.states[-1].ee_pos, ep1.states[-1].ee_pos)  # the world is the same
    assert all(np.array_equal(late.ee[k], ep3.states[max(k - 3, 0)].ee_pos) for k in range(8))  # 3 steps old
    assert not np.allclose(late.ee[7], ep3.states[7].ee_pos, atol=1e-3)
    expert = run_episode(_scene("pick_place", obs_noise=0.02, obs_delay=3))
    assert expert.success  # the expert reads the world's own state


@pytest.mark.parametrize("family", OURS)
def test_in_distribution_extended_scenes_pass_validity(family):
    fam = get_family(family)
    for seed in range(3):
        spec = fam.sample_scene(seed, space="extended")
        report = check_scene(spec)
        assert report.ok, f"{family} seed {seed}: {report.message}"


def test_the_extended_seed_distribution_is_the_core_scene_and_its_ood_draws_move_off_it():
    """The extension's factors that change the scene have a point range at their default (the seed
    distribution is the core scene, which the core-trained policy solves); OOD draws leave the point —
    a count is a whole number outside it — and read as outside the range."""
    from agents.critic.factors import read_factor

    for family in OURS[:4]:
        fam = get_family(family)
        for seed in range(3):
            spec = fam.make_scene(fam.sample_factors(np.random.default_rng(seed), space="extended"), seed)
            core = fam.make_scene(fam.sample_factors(np.random.default_rng(seed)), seed)
            assert _bare(spec) == _bare(core), family
    count = get_family("pick_place").factor("distractor_count")
    assert count.range == (0.0, 0.0)
    draws = {count.sample(np.random.default_rng(i), ood=True) for i in range(200)}
    assert draws == {1, 2, 3, 4}
    height = get_family("pick_place").factor("table_height")
    assert height.position(0.0) == 0.0 and height.position(0.04) == 1.5 and height.position(-0.08) == -2.0
    assert read_factor(height, 0.04).note == "outside the ID range (high)"
    assert read_factor(count, 3).position > 1.0
