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
from sim.jobs import BatchJob, run_batches
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


def test_batches_keep_the_scenes_order_on_a_pool_and_in_process() -> None:
    scenes = _scenes()
    jobs = [BatchJob(scenes=tuple(scenes[:2]), policy=SeededPolicy(str(SEED_SFT_4FAM), 0), max_steps=8),
            BatchJob(scenes=(scenes[2],), policy=SeededPolicy(str(SEED_SFT_4FAM), 0), max_steps=8)]
    here = run_batches(EpisodePool(0), jobs)
    with EpisodePool(1) as pool:
        there = run_batches(pool, jobs)
    assert [r.index for r in here] == [r.index for r in there] == [0, 1, 2]
    assert [(r.success, r.steps, r.error) for r in here] == [(r.success, r.steps, r.error) for r in there]
    assert all(r.ok and r.steps == 8 for r in here)
