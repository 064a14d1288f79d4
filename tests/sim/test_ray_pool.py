"""The episode pool on Ray (`sim.ray_pool`): the same results as the local process pool, every episode
exactly once when a Ray worker is killed in the middle of a batch, a hard per-episode limit, the executor
surface the loop's validation uses. The module starts one local Ray instance of two CPUs
(`ray.init(num_cpus=2)`) and stops it at the end. The same smoke run on the pool and on Ray, compared record
for record, is `tests/experiments/test_table1.py::test_smoke_cells_as_ray_tasks_match_the_local_ones`."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from sim.episode import Episode
from sim.families import get_family
from sim.pool import EpisodeJob, EpisodePool, make_pool
from sim.scene import SceneSpec
from sim.world import DYNAMIC

pytestmark = pytest.mark.integration
STEPS = 30


def _scenes(n: int) -> list[SceneSpec]:
    fam = get_family("pick_place")
    return [fam.make_scene(fam.sample_factors(np.random.default_rng(i)), seed=i) for i in range(n)]


@dataclasses.dataclass(frozen=True)
class NoisyPolicy:
    """A picklable factory whose actions depend only on the scene's seed (so on any worker, any process)."""

    def __call__(self, scene: SceneSpec):
        rng = np.random.default_rng(scene.seed)
        return lambda obs: rng.normal(0.0, 0.5, 7)


@dataclasses.dataclass(frozen=True)
class KillOnce:
    """Kills its own worker process with SIGKILL the first time it runs for a scene (a marker file per
    scene remembers it); the retry then runs the episode."""

    marks: str

    def __call__(self, scene: SceneSpec):
        mark = Path(self.marks) / f"{scene.seed}.killed"
        if scene.seed % 2 == 0 and not mark.exists():
            mark.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return NoisyPolicy()(scene)


@dataclasses.dataclass(frozen=True)
class Sleepy:
    def __call__(self, scene: SceneSpec):
        def policy(obs):
            time.sleep(2.0)
            return np.zeros(7)

        return policy if scene.seed == 1 else NoisyPolicy()(scene)


def _outcome(r) -> tuple:
    return r.index, r.success, r.failing_phase, r.steps, r.error


@pytest.fixture(scope="module")
def ray_pool():
    with make_pool("ray", 2) as pool:
        yield pool


def test_ray_gives_the_local_pools_results(tmp_path: Path, ray_pool) -> None:
    scenes = _scenes(4)
    jobs = [EpisodeJob(scene=s, max_steps=STEPS, out=tmp_path / "pool" / f"e{i}")
            for i, s in enumerate(scenes)]
    jobs += [EpisodeJob(scene=s, policy=NoisyPolicy(), max_steps=STEPS, out=tmp_path / "pool" / f"p{i}")
             for i, s in enumerate(scenes)]
    with EpisodePool(2) as pool:
        local = pool.run(jobs)
    on_ray = [dataclasses.replace(j, out=Path(str(j.out).replace("pool", "ray"))) for j in jobs]
    remote = ray_pool.run(on_ray)
    squares = [f.result() for f in [ray_pool.executor.submit(pow, k, 2) for k in range(4)]]
    assert squares == [0, 1, 4, 9]
    assert [_outcome(r) for r in remote] == [_outcome(r) for r in local]
    for a, b in zip(local, remote, strict=True):
        ea, eb = Episode.load(a.path), Episode.load(b.path)
        np.testing.assert_array_equal(ea.actions, eb.actions)
        for k in DYNAMIC:
            np.testing.assert_array_equal(getattr(ea.states[-1], k), getattr(eb.states[-1], k))


def test_a_killed_worker_loses_no_episode_and_duplicates_none(tmp_path: Path, ray_pool) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    scenes = _scenes(6)
    jobs = [EpisodeJob(scene=s, policy=KillOnce(str(marks)), max_steps=STEPS, out=tmp_path / "eps" / f"ep{i}")
            for i, s in enumerate(scenes)]
    results = ray_pool.run(jobs)
    killed = sorted(int(p.stem) for p in marks.glob("*.killed"))
    assert killed == [0, 2, 4]  # three workers died mid-batch, one per even scene
    assert [r.error for r in results] == [None] * 6 and [r.index for r in results] == list(range(6))
    saved = sorted(p.name for p in (tmp_path / "eps").iterdir())
    assert saved == sorted(f"ep{i}.{x}" for i in range(6) for x in ("json", "npz"))  # each exactly once
    for i, r in enumerate(results):
        assert json.loads((tmp_path / "eps" / f"ep{i}.json").read_text())["scene"]["seed"] == scenes[i].seed
        assert r.steps == Episode.load(r.path).steps
    with EpisodePool(2) as pool:  # and the same outcomes as a pool where nothing died
        clean = pool.run([EpisodeJob(scene=s, policy=NoisyPolicy(), max_steps=STEPS) for s in scenes])
    assert [(r.success, r.steps) for r in results] == [(r.success, r.steps) for r in clean]


def test_an_episode_past_its_limit_fails_alone(ray_pool) -> None:
    scenes = _scenes(3)
    jobs = [EpisodeJob(scene=s, policy=Sleepy(), max_steps=STEPS) for s in scenes]
    # the sleepy episode needs 60 s; the others a second or two alone, but several on a loaded machine (the
    # whole suite on two cores), so the limit leaves them room
    ray_pool.job_timeout_s = 25
    try:
        results = ray_pool.run(jobs)
    finally:
        ray_pool.job_timeout_s = None
    assert (results[1].error or "").startswith("job ran past its 25 s limit")
    assert results[0].error is None and results[2].error is None


def test_make_pool_rejects_what_it_cannot_run() -> None:
    with pytest.raises(ValueError, match="unknown executor 'dask'"):
        make_pool("dask")
    with pytest.raises(ValueError, match="--ray-address needs --executor ray"):
        make_pool("local", address="auto")

