"""The LIBERO-Goal family: its task table agrees with the package, holds LIBERO-Pro's own swap out and
leaves out the tasks no expert solves; its factor values split into seen and unseen as declared; its seed
scenes are the tasks as written; a swap moves the drawer's cabinet; and the drawer's scene validates in
LIBERO, its expert episode (played by the loop's episode runner) read as our drawer episode."""

from __future__ import annotations

import numpy as np
import pytest

from sim.families import get_family
from sim.libero.scene import LiberoScene
from sim.libero.world import libero_scene, task_bddl

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

FAM = get_family("libero_goal")
CABINET = "wooden_cabinet_1"


def _partners(scene: LiberoScene, pro: LiberoScene) -> tuple[str, tuple[str, ...]]:
    """(the subject, its swap partners) as the scene builder's docstring defines them, from the task's file
    and LIBERO-Pro's position file of it."""
    regions = {r.full_name: r for r in scene.regions}
    starts = {a[1]: a[2] for a in scene.init if a[0] == "on" and a[2] in regions and regions[a[2]].ranges}
    goal = scene.goal[0]
    if goal[0] == "open":
        subject, target = regions[goal[1]].target, None
    else:
        subject, target = goal[1], goal[2] if goal[2] in starts else regions[goal[2]].target
    held = next(o for o, r in starts.items() if r == pro.start_region(subject).full_name and o != subject)
    rest = [o for o in starts if o not in (subject, target, held)]
    fixtures = {n for names in scene.fixtures.values() for n in names}
    own_kind = sorted(o for o in rest if (o in fixtures) == (subject in fixtures))
    return subject, (*own_kind, *sorted(o for o in rest if o not in own_kind))


def test_the_task_table_is_what_the_package_says_and_holds_out_libero_pros_swap():
    from experiments.liberopro.evaluate import tasks

    pro = {t.name: LiberoScene.from_bddl(t.bddl) for t in tasks("libero_goal", "position")}
    suite = {t.name: t for t in tasks("libero_goal")}
    table = {row[0]: row for row in FAM.builder.TASKS.values()}
    assert FAM.factor("task").choices == tuple(FAM.builder.TASKS)
    # the suite less the push, the stove's knob and the drawer-then-bowl task (no expert: scene.py says why)
    assert set(suite) - set(table) == {"push_the_plate_to_the_front_of_the_stove", "turn_on_the_stove",
                                       "open_the_top_drawer_and_put_the_bowl_inside"}
    for task, words, goal, _, _, partners in table.values():
        scene = LiberoScene.from_bddl(suite[task].bddl)
        assert words == suite[task].instruction == scene.language
        subject, expected = _partners(scene, pro[task])
        assert partners == expected and len(partners) >= 3, task  # swap1-3 exist for every task
        if goal[0] == "opened":
            assert scene.goal == (("open", "wooden_cabinet_1_middle_region"),) and subject == CABINET
            assert goal[1] == f"{CABINET}/middle_level"
        else:
            assert scene.goal == (goal,)


def test_the_factor_values_split_into_seen_and_unseen_as_declared():
    for f in FAM.factors:
        assert set(f.choices).isdisjoint(f.ood_choices or ())
    assert {f.name: f.choices for f in FAM.factors if f.name != "task"} == {
        "wording": ("bddl", "set"), "start": ("own", "swap1"), "shift": ("none", "plus_y")}
    assert not FAM.factor("task").ood_choices  # every task is seen; what is unseen is how it is posed
    rng = np.random.default_rng(0)
    for ood in (False, True):
        for _ in range(20):
            flat = FAM.flat(FAM.sample_factors(rng, ood))
            for f in FAM.factors:
                assert flat[f.name] in (f.ood_choices if ood and f.ood_choices else f.choices)


def test_seed_scenes_are_the_tasks_as_written_and_a_swap_moves_the_drawer_s_cabinet():
    seeds = FAM.seed_scenes()
    assert [s.libero.task for s in seeds] == [row[0] for row in FAM.builder.TASKS.values()]
    for spec in seeds:
        scene = libero_scene(spec)
        assert scene == LiberoScene.from_bddl(task_bddl("libero_goal", spec.libero.task))
        assert spec.instruction == scene.language and spec.libero.mover is None
    spec = FAM.make_scene({"task": {"task": "open_drawer", "wording": "should"},
                           "spatial": {"start": "swap1", "shift": "plus_y"}}, 5)
    base, scene = LiberoScene.from_bddl(task_bddl("libero_goal", spec.libero.task)), libero_scene(spec)
    assert (spec.libero.mover, spec.libero.swap) == (CABINET, "flat_stove_1")
    assert spec.instruction == "the middle drawer of the cabinet should end up open"
    assert scene.start_region("flat_stove_1") == base.start_region(CABINET)
    moved = np.subtract(scene.start_region(CABINET).ranges, base.start_region("flat_stove_1").ranges)
    assert np.allclose(moved, [[0.0, 0.05, 0.0, 0.05]])
    bowl = FAM.make_scene({"task": {"task": "bowl_on_stove", "wording": "leave"}}, 0)
    assert bowl.instruction == "carry the bowl over and leave it on the stove"


def test_the_drawer_s_seed_scene_validates_and_its_expert_episode_reads_as_a_drawer_episode():
    """The loop's validity check of a LIBERO scene (`sim.libero.episode.check_libero_scene`, less the noisy
    demonstration tries, for time) on the drawer's seed scene: it builds, the drawer expert opens it; the
    clean episode's states carry the slide joint, its handle and the cabinet, and our goal
    `opened(joint, OPENED)` is LIBERO's "open"."""
    from sim.libero.env import LiberoEnv
    from sim.libero.episode import check_libero_scene
    from sim.predicates import goal_reached, open_frac

    spec = next(s for s in FAM.seed_scenes() if s.libero.task == "open_the_middle_drawer_of_the_cabinet")
    report = check_libero_scene(spec, demo_tries=0)
    assert report.ok, report.message
    ep = report.attempt
    assert ep.success and ep.failing_phase is None and ep.policy == "expert"
    assert {"approach", "pull", "done"} <= set(ep.phases) <= set(FAM.phases)
    assert not {"lift", "transport", "place"} & set(ep.phases)
    joint = FAM.builder.DRAWER
    s0, s1 = ep.states[0], ep.states[-1]
    assert s0.layout.joints == s0.layout.handles == (joint,) and CABINET in s0.layout.entities
    assert open_frac(s0, joint) < 0.1 and goal_reached(s1, spec.goal) and not goal_reached(s0, spec.goal)
    lo, hi = s0.layout.joint_range[0]
    env = LiberoEnv(task_bddl("libero_goal", spec.libero.task), name="drawer")
    try:  # LIBERO's wooden cabinet is open below max(default_open_ranges) of its joint position
        libero_open = max(env._inner.get_object(CABINET).object_properties["articulation"]
                          ["default_open_ranges"])
        # fixtures stand where the BDDL puts them: two of them, apart, neither at the world's origin
        cabinet, stove = env.fixture_position(CABINET), env.fixture_position("flat_stove_1")
        assert np.linalg.norm(cabinet[:2] - stove[:2]) > 0.1 and np.linalg.norm(cabinet[:2]) > 0.05
    finally:
        env.close()
    assert abs(lo + FAM.builder.OPENED * (hi - lo) - (-libero_open)) < 1e-3
