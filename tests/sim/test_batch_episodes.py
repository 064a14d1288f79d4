"""Episodes in lockstep (`sim.episode.run_episodes`): each is the episode `run_episode` gives with the same
chunks, whatever its batch-mates do; one that raises is its own result; the object-token policy acting for a
batch gives each episode the chunks it gives that episode alone; `run_batches` keeps the scenes' order on a
pool or in process."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from coda_policy.awr import SeededPolicy, load_seeded
from coda_policy.pretrained import SEED_SFT_4FAM
from sim.episode import Observation, batch_world, run_episode, run_episodes
from sim.families import get_family
from sim.jobs import BatchJob, batches_of, run_batches
from sim.pool import EpisodePool
from sim.scene import SceneSpec


def _scenes() -> list[SceneSpec]:
    out = []
    for k, name in enumerate(("pick_place", "stack_insert", "pick_place")):
        fam = get_family(name)
        out.append(fam.make_scene(fam.sample_factors(np.random.default_rng(k)), seed=k))
    return out


def _chunk(obs: Observation, gain: float) -> np.ndarray:
    """A deterministic chunk of 3 actions that reads the state (so a different state gives another)."""
    a = np.zeros((3, 7))
    a[:, 0] = np.clip(gain * (0.1 - obs.state.ee_pos[0]), -1, 1)
    a[:, 2] = np.clip(gain * (0.3 - obs.state.ee_pos[2]), -1, 1)
    a[:, 6] = 1.0 if obs.step < 6 else -1.0
    return a


GAINS = (2.0, 5.0, 9.0)


def _batched(obs: Sequence[Observation], which: Sequence[int]) -> list[np.ndarray]:
    return [_chunk(o, GAINS[i]) for o, i in zip(obs, which, strict=True)]


def test_an_episode_in_a_batch_is_the_episode_run_alone() -> None:
    scenes = _scenes()
    together = run_episodes(scenes, _batched, max_steps=17)  # 17: the last chunk is cut short
    for k, scene in enumerate(scenes):
        alone = run_episode(scene, lambda obs, k=k: _chunk(obs, GAINS[k]), max_steps=17)
        assert together[k].steps == alone.steps == 17
        np.testing.assert_array_equal(together[k].actions, alone.actions)
        assert together[k].phases == alone.phases and together[k].success == alone.success
        for a, b in zip(together[k].states, alone.states, strict=True):
            np.testing.assert_array_equal(a.ee_pos, b.ee_pos)
    assert not np.array_equal(together[0].actions, together[1].actions)  # the gains differ: so do they


def test_an_episode_that_raises_is_its_own_result_and_the_batch_goes_on() -> None:
    def act(obs: Sequence[Observation], which: Sequence[int]) -> list[np.ndarray]:
        return [np.full((3, 7), np.nan) if i == 1 else _chunk(o, GAINS[i])
                for o, i in zip(obs, which, strict=True)]

    got = run_episodes(_scenes(), act, max_steps=9)
    assert isinstance(got[1], ValueError) and "finite" in str(got[1])
    assert got[0].steps == got[2].steps == 9


def test_only_a_world_that_runs_batches_takes_one() -> None:
    assert batch_world(_scenes()) is not None
    with pytest.raises(ValueError, match="one world that runs episodes in lockstep"):
        run_episodes([], _batched)


def test_the_policy_acting_for_a_batch_gives_each_episode_its_own_chunks() -> None:
    scenes = _scenes()
    policy = load_seeded(SEED_SFT_4FAM, 3, fresh=True)
    obs = [run_episode(s, lambda o: np.zeros((1, 7)), max_steps=1).states[0] for s in scenes]
    from sim.episode import make_observation

    views = [make_observation(s, st, 0, {}) for s, st in zip(scenes, obs, strict=True)]
    act = policy.bind_batch(scenes)
    for step in range(2):  # the second call draws each episode's next noise from its own generator
        together = act(views, [0, 1, 2])
        if step == 0:
            alone = [policy.bind(s)(v) for s, v in zip(scenes, views, strict=True)]
        else:
            alone = []
            for s, v in zip(scenes, views, strict=True):
                one = policy.bind(s)
                one(v)
                alone.append(one(v))
        for a, b in zip(together, alone, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)
    assert SeededPolicy(str(SEED_SFT_4FAM), 0).batches()


class StepPolicy:
    """A picklable factory that batches: the deterministic `_chunk` policy, gain by scene seed; a scene
    whose seed is `crash_seed` kills its worker (alone or in a batch)."""

    def __init__(self, crash_seed: int | None = None) -> None:
        self.crash_seed = crash_seed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepPolicy) and other.crash_seed == self.crash_seed

    def __hash__(self) -> int:
        return hash(self.crash_seed)

    def batches(self) -> bool:
        return True

    def _gain(self, scene: SceneSpec) -> float:
        if scene.seed == self.crash_seed:
            import os

            os._exit(3)
        return GAINS[scene.seed % 3]

    def __call__(self, scene: SceneSpec):
        return lambda obs: _chunk(obs, self._gain(scene))

    def batch(self, scenes: Sequence[SceneSpec]):
        return lambda obs, which: [_chunk(o, self._gain(scenes[i])) for o, i in zip(obs, which, strict=True)]


def test_the_pool_runs_what_can_batch_in_batches_and_saves_each_episode(tmp_path) -> None:
    from sim.episode import Episode
    from sim.pool import EpisodeJob

    scenes = _scenes()
    jobs = [EpisodeJob(scene=s, policy=StepPolicy(), max_steps=11, record_every=2, out=tmp_path / f"b{k}")
            for k, s in enumerate(scenes)]
    assert [len(b.scenes) for b in batches_of(jobs, 2)] == [2, 1]
    assert batches_of([EpisodeJob(scene=scenes[0])]) is None  # the expert acts one episode at a time
    assert batches_of([jobs[0], EpisodeJob(scene=scenes[1], policy=StepPolicy(), max_steps=12)]) is None
    with EpisodePool(1) as pool:
        batched = pool.run(jobs)
        alone = pool.run([EpisodeJob(scene=j.scene, policy=j.policy, max_steps=11, record_every=2,
                                     out=tmp_path / f"a{k}") for k, j in enumerate(jobs)], batch=False)
    assert [r.index for r in batched] == [0, 1, 2]
    for b, a in zip(batched, alone, strict=True):
        assert (b.success, b.steps, b.error) == (a.success, a.steps, a.error) and b.steps == 11
        eb, ea = Episode.load(b.path), Episode.load(a.path)
        np.testing.assert_array_equal(eb.actions, ea.actions)
        assert list(eb.state_steps) == list(ea.state_steps) == [0, 2, 4, 6, 8, 10, 11]


def test_a_batch_whose_worker_dies_runs_again_one_a_job_and_only_the_culprit_fails() -> None:
    from sim.pool import EpisodeJob

    scenes = _scenes()  # seeds 0, 1, 2
    jobs = [EpisodeJob(scene=s, policy=StepPolicy(crash_seed=1), max_steps=6) for s in scenes]
    with EpisodePool(1) as pool:
        got = pool.run(jobs)
        again = pool.run([jobs[0]])  # the pool was rebuilt
    assert [r.index for r in got] == [0, 1, 2]
    assert got[0].ok and got[2].ok and got[0].steps == got[2].steps == 6
    assert not got[1].ok and "worker died" in got[1].error
    assert again[0].ok


def test_batches_keep_the_scenes_order_in_process() -> None:
    scenes = _scenes()
    jobs = [BatchJob(scenes=tuple(scenes[:2]), policy=SeededPolicy(str(SEED_SFT_4FAM), 0), max_steps=8),
            BatchJob(scenes=(scenes[2],), policy=SeededPolicy(str(SEED_SFT_4FAM), 0), max_steps=8)]
    got = run_batches(EpisodePool(0), jobs)
    assert [r.index for r in got] == [0, 1, 2] and all(r.ok and r.steps == 8 for r in got)
