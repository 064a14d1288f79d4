"""The LIBERO-Object family: scenes that name LIBERO tasks, built and run in real LIBERO, read as our
`WorldState`, labelled, saved and loaded as our episodes; its factor table agrees with the package."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from sim.episode import Episode, run_episode
from sim.families import get_family
from sim.libero.scene import LiberoScene
from sim.libero.world import libero_scene, task_bddl

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

FAM = get_family("libero_object")


def _starts(spec, seed: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """Where LIBERO starts the scene's objects for `seed` (positions, and the objects in that order)."""
    import tempfile

    from sim.libero.episode import libero_env
    from sim.libero.world import LiberoReader

    with tempfile.TemporaryDirectory() as tmp:
        env = libero_env(spec, tmp)
        try:
            env.reset(seed=seed)
            read = LiberoReader(env)
            return read.read().obj_pos, read.objects
        finally:
            env.close()


@dataclass(frozen=True)
class _Layout:
    """One task's position factor as LIBERO's files give it: the object of interest, the objects it may swap
    with (partner → the region it starts in) and the partner LIBERO-Pro's `_swap` file uses (held out)."""

    task: str
    instruction: str
    subject: str
    partners: dict[str, str]
    held_out: str | None


def _layouts(suite: str) -> list[_Layout]:
    """Every task of the original suite whose goal's object of interest starts on a placement region;
    partners are the other objects starting on placement regions, minus the goal's container and the one
    LIBERO-Pro's position file swaps it with — what the family's task table was computed from."""
    from experiments.liberopro.evaluate import tasks
    from sim.libero.scene import LiberoScene

    pro = {t.name: t for t in tasks(suite, "position")}
    out = []
    for t in tasks(suite):
        scene = LiberoScene.from_bddl(t.bddl)
        goal = scene.goal[0] if scene.goal else ()
        subject = goal[1] if len(goal) >= 2 else None
        named = {x for atom in scene.goal for x in atom[1:]}
        starts = {a[1]: a[2] for a in scene.init if a[0] == "on"}
        if subject not in starts or not scene.region(starts[subject]).ranges:
            continue
        partners = {o: r for o, r in starts.items() if o != subject and scene.region(r).ranges
                    and o not in named and not any(n.startswith(o + "_") for n in named)}
        held = None
        if t.name in pro:
            moved_to = LiberoScene.from_bddl(pro[t.name].bddl).start_region(subject).full_name
            held = next((o for o, r in partners.items() if r == moved_to), None)
        partners = {o: r for o, r in partners.items() if o != held}
        out.append(_Layout(task=t.name, instruction=t.instruction, subject=subject, partners=partners,
                           held_out=held))
    return out


def test_the_task_table_is_what_the_package_says_and_holds_out_libero_pros_swap_partner():
    table = {v[0]: v for v in FAM.builder.TASKS.values()}
    found = {lay.task: lay for lay in _layouts("libero_object")}
    assert set(table) == set(found) and len(table) == 10
    assert FAM.factor("task").choices == tuple(FAM.builder.TASKS)  # the literal schema names every task
    for task, (_, subject, words, partners) in table.items():
        lay = found[task]
        assert subject == lay.subject and words == lay.instruction and partners == tuple(sorted(lay.partners))
        assert lay.held_out is not None and lay.held_out not in partners  # the benchmark's own swap


def test_in_distribution_scenes_are_the_tasks_as_written():
    for spec in FAM.seed_scenes():
        scene = libero_scene(spec)
        assert scene == LiberoScene.from_bddl(task_bddl(spec.libero.suite, spec.libero.task))
        assert spec.instruction == scene.language and spec.goal[0].args == tuple(scene.goal[0][1:])
    assert {s.libero.task for s in FAM.seed_scenes()} == {v[0] for v in FAM.builder.TASKS.values()}


def test_a_swap_moves_the_item_into_its_partners_region_and_a_paraphrase_rewords_it():
    spec = FAM.make_scene({"task": {"task": "milk", "wording": "grab"}, "spatial": {"start": "swap2"}}, 5)
    base = LiberoScene.from_bddl(task_bddl("libero_object", spec.libero.task))
    scene = libero_scene(spec)
    assert spec.libero.swap == "chocolate_pudding_1"
    assert spec.instruction == "grab the milk and drop it in the basket"
    assert scene.start_region("milk_1") == base.start_region("chocolate_pudding_1")
    assert scene.start_region("chocolate_pudding_1") == base.start_region("milk_1")
    assert scene.language == spec.instruction != base.language


def test_a_shift_moves_the_item_s_start_region_and_the_item_starts_there():
    plain, moved = (FAM.make_scene({"task": {"task": "milk"}, "spatial": {"start": "swap1", "shift": s}}, 7)
                    for s in ("none", "minus_x"))
    assert moved.libero.move == (-0.05, 0.0) and plain.libero.move is None
    before, after = (libero_scene(s).start_region("milk_1") for s in (plain, moved))
    assert before.full_name == after.full_name  # the same region (the swap partner's), moved
    assert np.allclose(np.subtract(after.ranges, before.ranges), [[-0.05, 0.0, -0.05, 0.0]])
    x = []
    for spec in (plain, moved):
        pos, names = _starts(spec, 7)
        x.append(pos.reshape(-1, 3)[names.index("milk_1")])
    assert 0.02 < x[0][0] - x[1][0] < 0.08  # a 5 cm shift of a 5 cm region: the item moved along -x


def test_a_libero_scene_is_refused_by_our_builder_with_where_it_runs():
    from sim.builder import build_scene
    from sim.families import our_families

    assert FAM.world == "libero" and "libero_object" not in our_families() and "pick_place" in our_families()
    with pytest.raises(ValueError, match="runs in LIBERO"):
        build_scene(FAM.seed_scenes()[0])


def test_an_expert_episode_in_libero_reads_as_our_episode(tmp_path):
    spec = FAM.seed_scenes()[0]
    ep = run_episode(spec)
    assert ep.success and ep.failing_phase is None and ep.phases[-1] == "done"
    assert set(ep.phases) <= set(FAM.phases) and "transport" in ep.phases
    s0, s1 = ep.states[0], ep.states[-1]
    subject, target = (str(a) for a in spec.goal[0].args)
    assert subject in s0.layout.objects and s0.layout.regions == (target,)
    assert abs(s0.bounds(subject)[0][2]) < 0.01  # heights from the support the objects rest on
    assert not s0.grasp[s0.entity(subject)] and ep.actions.shape == (ep.steps, 7)
    lifted = [s for s in ep.states if s.grasp[s.entity(subject)]]
    assert lifted and max(s.bounds(subject)[0][2] for s in lifted) > 0.05  # carried: both pads on it
    assert np.linalg.norm(s1.position(subject)[:2] - s1.position(target)[:2]) < 0.07
    back = Episode.load(ep.save(tmp_path / "ep"))
    assert back.scene == spec and back.success and back.phases == ep.phases
    assert np.allclose(back.states[-1].obj_pos, s1.obj_pos)


def test_validity_in_libero_keeps_a_demonstration_and_names_what_fails():
    from sim.validity import check_scene

    ok = check_scene(FAM.seed_scenes()[1])
    assert ok.ok and ok.checks == {"compile": True, "solvability": True} and ok.demo.success
    assert ok.demo.policy in ("expert", "expert_dart0.3")
    bad = FAM.seed_scenes()[1].model_copy(update={"libero": FAM.seed_scenes()[1].libero.model_copy(
        update={"swap": "no_such_item_1"})})
    report = check_scene(bad)
    assert not report.ok and report.reason == "compile" and "no_such_item_1" in report.message


def test_a_scene_and_its_seed_fix_libero_s_sampled_start():
    spec = FAM.seed_scenes()[3]
    starts = [_starts(spec, seed)[0] for seed in (spec.seed, spec.seed, spec.seed + 1)]
    assert np.allclose(starts[0], starts[1]) and not np.allclose(starts[0], starts[2])


def test_the_state_says_which_way_each_item_is_turned_and_where_its_box_is():
    """Objects read as ours: the root body's world rotation (the expert aligns its grasp to it; a reader
    giving the rotation since reset hid it from the policy) and the body-frame box, whose world bounds are
    LIBERO's own collision box."""
    import tempfile

    from sim.libero.episode import libero_env
    from sim.libero.world import LiberoReader

    spec = FAM.seed_scenes()[1]
    with tempfile.TemporaryDirectory() as tmp:
        env = libero_env(spec, tmp)
        try:
            env.reset(seed=spec.seed)
            read = LiberoReader(env)
            s = read.read()
            turned = 0
            for name in s.layout.objects:
                assert np.allclose(s.obj_mat[s.obj(name)], env.pose(name)[1])
                lo, hi = s.bounds(name)
                box = env.box(name)
                assert np.allclose(lo, box.lo - [0, 0, read.support], atol=0.01)
                assert np.allclose(hi, box.hi - [0, 0, read.support], atol=0.01)
                turned += not np.allclose(s.obj_mat[s.obj(name)], np.eye(3), atol=0.05)
            assert turned > 0  # LIBERO starts items turned: the reset pose is not the identity
        finally:
            env.close()


def test_a_policy_acts_from_the_current_state_whatever_is_recorded():
    seen: list[tuple[int, float]] = []

    def push_x(obs):  # one action per call: +x at 2.5 cm a step, gripper open
        seen.append((obs.step, float(obs.state.ee_pos[0])))
        return np.array([[0.5, 0, 0, 0, 0, 0, -1.0]])

    ep = run_episode(FAM.seed_scenes()[0].model_copy(update={"max_steps": 12}), push_x, record_every=5)
    assert [t for t, _ in seen] == list(range(12)) and ep.state_steps.tolist() == [0, 5, 10, 12]
    xs = [x for _, x in seen]
    assert all(b > a for a, b in zip(xs[1:], xs[2:], strict=False))  # a fresh state at every call


def test_each_scene_s_dart_demonstration_draws_its_own_noise():
    """Demonstrations of different scenes must not drift the same way at the same step (FINDINGS #37)."""
    from sim.libero.episode import dart_rng

    a, b = (FAM.make_scene({"task": {"task": "milk"}}, seed) for seed in (5, 6))

    def draws(spec, k):
        return dart_rng(spec, k).normal(0.0, 1.0, 12)

    assert np.array_equal(draws(a, 0), draws(a, 0))  # a scene's demonstration is reproducible
    assert not np.allclose(draws(a, 0), draws(b, 0))  # another scene drifts its own way
    assert not np.allclose(draws(a, 0), draws(a, 1))  # and so does another try


def test_the_loop_s_training_features_are_the_ones_a_policy_sees_acting():
    """A LIBERO episode's recorded states through `ChunkDataset` (how the loop trains) give the features
    `featurize_libero` gives live at each step (how every LIBERO policy acts) — FINDINGS #37 checked this
    on a whole demonstration before blaming the data."""
    import tempfile

    from coda_policy.dataset import ChunkDataset
    from coda_policy.object_token.libero_features import featurize_libero, reader
    from common.text import default_embedder
    from sim.libero.episode import libero_env, run_libero_episode

    spec = FAM.make_scene({"task": {"task": "butter", "wording": "put"}}, 11)
    ep = run_libero_episode(spec, max_steps=12)
    emb = default_embedder()
    recorded = ChunkDataset([ep], 8, embedder=emb).features[0]
    live = []
    with tempfile.TemporaryDirectory() as tmp:
        env = libero_env(spec, tmp)
        try:
            env.reset(seed=int(spec.seed))
            read = reader(env)
            for a in ep.actions:
                live.append(featurize_libero(read, spec.instruction, emb))
                env.step(a)
            live.append(featurize_libero(read, spec.instruction, emb))
        finally:
            env.close()
    assert len(recorded) == len(live) == 13
    for r, x in zip(recorded, live, strict=True):
        for key in ("robot", "objects", "text"):
            assert np.allclose(r[key], x[key], atol=1e-5), key
