"""The LIBERO-Spatial family: its task table agrees with the package and holds LIBERO-Pro's own plate swap
out; its edits move the plate (not the bowl) and reword the instruction keeping the bowl's place; a scene
of it is solved by LIBERO's expert and read as our episode."""

from __future__ import annotations

import numpy as np
import pytest

from sim.episode import run_episode
from sim.families import get_family
from sim.libero.scene import LiberoScene
from sim.libero.world import libero_scene, task_bddl

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

FAM = get_family("libero_spatial")
PLATE, BOWL = "plate_1", "akita_black_bowl_1"


def _placements(scene: LiberoScene) -> dict[str, str]:
    """object → the table's placement rectangle it starts on (objects on a fixture part or on another
    object are left out)."""
    regions = {r.full_name: r for r in scene.regions}
    return {a[1]: a[2] for a in scene.init if a[0] == "on" and a[2] in regions and regions[a[2]].ranges}


def test_the_task_table_is_what_the_package_says_and_holds_out_libero_pros_plate_swap():
    from experiments.liberopro.evaluate import tasks

    pro = {t.name: LiberoScene.from_bddl(t.bddl) for t in tasks("libero_spatial", "position")}
    suite = {t.name: t for t in tasks("libero_spatial")}
    assert FAM.factor("task").choices == tuple(FAM.builder.TASKS)
    assert set(suite) == {v[0] for v in FAM.builder.TASKS.values()}  # every task of the suite
    for task, where, words, partners in FAM.builder.TASKS.values():
        scene = LiberoScene.from_bddl(suite[task].bddl)
        assert words == suite[task].instruction == scene.language and where in words
        assert scene.goal == (("on", BOWL, PLATE),)
        held = next(a[2] for a in pro[task].init if a[0] == "on" and a[1] == PLATE)  # where Pro puts it
        starts = _placements(scene)
        held = starts.get(held, held)  # on an object (the cookie box): that object's place is held out
        expected = sorted(o for o, r in starts.items() if o not in (BOWL, PLATE) and r != held)
        assert list(partners) == expected and len(partners) >= 3  # swap1-3 exist for every task
        assert all(starts[p] != held for p in partners)


def test_in_distribution_scenes_are_the_tasks_as_written():
    for spec in FAM.seed_scenes():
        scene = libero_scene(spec)
        assert scene == LiberoScene.from_bddl(task_bddl(spec.libero.suite, spec.libero.task))
        assert spec.instruction == scene.language and spec.goal[0].args == tuple(scene.goal[0][1:])
        assert spec.libero.mover is None and '"mover"' not in spec.to_json()


def test_a_swap_moves_the_plate_not_the_bowl_and_a_paraphrase_keeps_the_bowls_place():
    spec = FAM.make_scene({"task": {"task": "next_to_plate", "wording": "needs"},
                           "spatial": {"plate": "swap2", "shift": "minus_x"}}, 5)
    base = LiberoScene.from_bddl(task_bddl("libero_spatial", spec.libero.task))
    scene = libero_scene(spec)
    assert (spec.libero.mover, spec.libero.swap) == (PLATE, "flat_stove_1")
    assert spec.instruction == "the plate needs the black bowl next to the plate on it"
    assert scene.start_region(PLATE).full_name == base.start_region("flat_stove_1").full_name
    assert scene.start_region("flat_stove_1") == base.start_region(PLATE)
    assert scene.start_region(BOWL) == base.start_region(BOWL)  # the bowl stays where the words say
    moved = np.subtract(scene.start_region(PLATE).ranges, base.start_region("flat_stove_1").ranges)
    assert np.allclose(moved, [[-0.05, 0.0, -0.05, 0.0]])
    again = type(spec).from_json(spec.to_json())
    assert again == spec and again.libero.mover == PLATE


def test_libero_object_scenes_keep_their_ids():
    """`LiberoRef.mover` is written only when set: a scene id (a hash of the JSON) made before it existed
    still names the same scene, so earlier runs' verdicts and episodes match."""
    spec = get_family("libero_object").make_scene(
        {"task": {"task": "milk"}, "spatial": {"start": "swap1", "shift": "plus_y"}}, 3)
    assert spec.scene_id == "b65eeabf29d7" and "mover" not in spec.to_json()


def test_an_expert_episode_puts_the_named_bowl_on_the_plate_and_reads_as_our_episode():
    spec = FAM.make_scene({"task": {"task": "on_stove"}, "spatial": {"plate": "swap1", "shift": "plus_y"}}, 4)
    ep = run_episode(spec)
    assert ep.success and ep.failing_phase is None and ep.phases[-1] == "done"
    assert set(ep.phases) <= set(FAM.phases) and "transport" in ep.phases
    s0, s1 = ep.states[0], ep.states[-1]
    assert {BOWL, "akita_black_bowl_2", PLATE} <= set(s0.layout.objects) and s0.layout.regions == ()
    assert s0.bounds(BOWL)[0][2] > 0.02  # it starts raised, on the stove
    assert np.linalg.norm(s1.position(BOWL)[:2] - s1.position(PLATE)[:2]) < 0.05
    assert np.linalg.norm(s1.position("akita_black_bowl_2") - s0.position("akita_black_bowl_2")) < 0.02
