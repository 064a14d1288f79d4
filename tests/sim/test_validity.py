"""Scene validity: deliberately broken scenes fail with the right reason; a good one passes with a demo."""

from __future__ import annotations

import pytest

from sim.families import get_family
from sim.scene import FixtureSpec, ObjectSpec, Predicate, SceneSpec
from sim.validity import CHECKS, ValidityConfig, check_scene

FAM = get_family("pick_place")


def _scene(**factors) -> SceneSpec:
    """A pick_place scene with some factors changed from their defaults."""
    values = FAM.default_factors()
    for group in values.values():
        for k in list(group):
            if k in factors:
                group[k] = factors.pop(k)
    assert not factors, f"unknown factors {factors}"
    return FAM.make_scene(values)


def _with_object(spec: SceneSpec, **changes) -> SceneSpec:
    obj, *rest = spec.objects
    return spec.model_copy(update={"objects": (obj.model_copy(update=changes), *rest)})


def test_good_scene_passes_with_a_demo():
    r = check_scene(_scene())
    assert r.ok, r.message
    assert r.reason is None
    assert r.checks == dict.fromkeys(CHECKS, True)
    assert r.demo is not None and r.demo.success and r.demo.failing_phase is None
    assert r.demo.phases[-1] == "done"
    assert r.attempt is r.demo


def test_solve_false_skips_the_expert():
    r = check_scene(_scene(), solve=False)
    assert r.ok and "solvability" not in r.checks and r.demo is None


def test_objects_at_the_same_place_interpenetrate():
    r = check_scene(_with_object(_scene(target_x=0.05, target_y=0.12), pos=(0.05, 0.12)), solve=False)
    assert (r.ok, r.reason) == (False, "interpenetration")
    assert "'object'" in r.message and "'target'" in r.message and "mm" in r.message
    assert r.checks == {"compile": True, "interpenetration": False}


def test_floating_object_fails_settling():
    r = check_scene(_with_object(_scene(), z=0.3), solve=False)
    assert (r.ok, r.reason) == (False, "settling")
    assert "'object' dropped" in r.message
    assert r.checks["interpenetration"] and not r.checks["settling"]


def test_object_beyond_the_table_edge_falls_off():
    r = check_scene(_scene(obj_x=0.6, obj_y=0.0), solve=False)
    assert (r.ok, r.reason) == (False, "settling")
    assert "fell off the table" in r.message


def test_far_object_is_unreachable():
    r = check_scene(_scene(obj_x=0.45, obj_y=-0.45), solve=False)  # on the table, 1.11 m from the base
    assert (r.ok, r.reason) == (False, "reachability")
    assert "object 'object'" in r.message and "1.11 m" in r.message


def test_ik_rejects_a_point_beyond_the_arms_reach():
    # 0.85 m straight ahead: inside a widened distance band, but no arm pose gets there pointing down
    r = check_scene(_scene(obj_x=0.29, obj_y=0.0), solve=False, config=ValidityConfig(reach_max=1.0))
    assert (r.ok, r.reason) == (False, "reachability")
    assert "cannot reach 5 cm above object 'object'" in r.message


def test_oversized_object_is_unsolvable():
    r = check_scene(_scene(size=0.06))  # 12 cm cube; the Panda opens 8 cm
    assert (r.ok, r.reason) == (False, "solvability")
    assert r.checks["reachability"] and not r.checks["solvability"]
    assert r.demo is None and r.attempt is not None and not r.attempt.success
    assert f"phase {r.attempt.failing_phase!r}" in r.message


def test_placement_failure_is_reported():
    tiny = (0.0, 0.001, 0.0, 0.001)
    objs = tuple(ObjectSpec(name=n, kind="box", category="cube", size=(0.02, 0.02, 0.02), region=tiny)
                 for n in ("a", "b"))
    spec = _scene().model_copy(update={"objects": objs})
    r = check_scene(spec)
    assert (r.ok, r.reason) == (False, "placement")
    assert "'b'" in r.message and r.checks == {"compile": False}


def test_compile_error_is_reported():
    spec = _scene().model_copy(update={"fixtures": (
        FixtureSpec(name="bin", kind="bin", pos=(-0.2, 0.35), init={"lid": 0.5}),)})
    r = check_scene(spec)
    assert (r.ok, r.reason) == (False, "compile")
    assert "no joint 'lid'" in r.message


def test_fixture_reach_covers_what_the_goal_needs():
    near = FixtureSpec(name="cab", kind="cabinet", pos=(0.33, 0.0))
    ok = check_scene(_scene().model_copy(update={"fixtures": (near,)}), solve=False)
    assert ok.ok, ok.message  # no false overlap, drift or reach failures from a closed cabinet
    far = _scene().model_copy(update={"fixtures": (FixtureSpec(name="cab", kind="cabinet", pos=(0.5, 0.0)),)})
    assert check_scene(far, solve=False).ok  # its handles are out of reach, but the goal needs neither
    every = check_scene(far, solve=False, config=ValidityConfig(handles="all"))
    assert (every.ok, every.reason) == (False, "reachability")
    assert "handle of 'cab/drawer0'" in every.message and "from the robot base" in every.message
    into = far.model_copy(update={"goal": (Predicate(fn="inside", args=("object", "cab/drawer1")),)})
    named = check_scene(into, solve=False)
    assert (named.ok, named.reason) == (False, "reachability")
    assert "'cab/drawer1'" in named.message  # its handle (the joint shares the region's name)


def test_a_goal_region_must_be_reachable():
    def bin_at(x: float) -> SceneSpec:
        return _scene().model_copy(update={"fixtures": (FixtureSpec(name="box", kind="bin", pos=(x, -0.35)),),
                                           "goal": (Predicate(fn="inside", args=("object", "box")),)})

    near = check_scene(bin_at(-0.2), solve=False)
    assert near.ok, near.message
    far = check_scene(bin_at(0.45), solve=False)  # the bin's nearest usable point is ~1 m away
    assert (far.ok, far.reason) == (False, "reachability")
    assert "region 'box'" in far.message


def test_config_is_validated():
    with pytest.raises(ValueError, match="reach_min"):
        ValidityConfig(reach_min=0.9, reach_max=0.8)
    with pytest.raises(ValueError, match="handles"):
        ValidityConfig(handles="some")
