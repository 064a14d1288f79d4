"""EpisodePool: results in job order, failures isolated to their job, a dead worker replaced."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import numpy as np
import pytest

from sim.episode import Episode, Observation
from sim.families import get_family
from sim.pool import EpisodeJob, EpisodePool, EpisodeResult
from sim.scene import SceneSpec

STEPS = 4  # control steps per job: enough to exercise stepping, short enough for a fast test


# Policy factories must be module-level so that spawned workers can unpickle them.
def still_factory(scene: SceneSpec):
    return lambda obs: np.zeros(7)


def one_thread_factory(scene: SceneSpec):
    threads = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    if set(threads.values()) != {"1"}:
        raise RuntimeError(f"worker BLAS threads not limited: {threads}")
    return still_factory(scene)


def raising_factory(scene: SceneSpec):
    def policy(obs: Observation) -> np.ndarray:
        raise ValueError("policy bug")

    return policy


def crashing_factory(scene: SceneSpec):
    def policy(obs: Observation) -> np.ndarray:
        os._exit(1)  # a hard crash: no exception, no cleanup, like a segfault

    return policy


def sleeping_factory(scene: SceneSpec):
    def policy(obs: Observation) -> np.ndarray:
        time.sleep(600)
        return np.zeros(7)

    return policy


def scene(seed: int) -> SceneSpec:
    return get_family("pick_place").sample_scene(seed)


def jobs(*policies, steps: int = STEPS) -> list[EpisodeJob]:
    return [EpisodeJob(scene=scene(i), policy=p, max_steps=steps) for i, p in enumerate(policies)]


@pytest.fixture(scope="module")
def pool() -> Iterator[EpisodePool]:
    with EpisodePool(workers=2) as p:
        yield p


def check_ok(r: EpisodeResult, steps: int = STEPS) -> None:
    assert r.ok, r.trace or r.error
    assert r.steps == steps and r.wall_s > 0


def test_results_come_back_in_job_order(pool: EpisodePool, tmp_path) -> None:
    todo = jobs("expert", still_factory, one_thread_factory, still_factory)
    todo[1] = EpisodeJob(scene=todo[1].scene, policy=still_factory, out=tmp_path / "ep1", max_steps=STEPS)
    seen: list[int] = []
    results = pool.run(todo, progress=lambda r: seen.append(r.index))
    assert [r.index for r in results] == list(range(len(todo)))
    assert sorted(seen) == list(range(len(todo)))
    for r in results:
        check_ok(r)
    assert results[1].path is not None and results[0].path is None
    ep = Episode.load(results[1].path)
    assert ep.steps == STEPS and ep.scene == todo[1].scene and ep.policy == "still_factory"


def test_a_raising_job_is_an_error_result(pool: EpisodePool) -> None:
    unpicklable = lambda scene: still_factory(scene)  # noqa: E731 - a lambda cannot reach a worker
    results = pool.run(jobs("expert", raising_factory, "expert", "no_such_policy", unpicklable))
    assert results[1].error == "ValueError: policy bug" and "raise ValueError" in results[1].trace
    assert not results[1].success
    assert "unknown policy 'no_such_policy'" in results[3].error
    assert "pickle" in results[4].error.lower()
    check_ok(results[0])
    check_ok(results[2])


def test_a_crashed_worker_is_reported_and_replaced(pool: EpisodePool) -> None:
    before = pool.restarts
    results = pool.run(jobs("expert", crashing_factory, still_factory))
    assert [r.index for r in results] == [0, 1, 2]
    assert "worker died" in results[1].error
    check_ok(results[0])
    check_ok(results[2])
    assert pool.restarts > before
    check_ok(pool.run(jobs("expert"))[0])  # the same pool keeps working


def test_a_job_past_its_time_limit_is_killed() -> None:
    with EpisodePool(workers=1, job_timeout_s=2.0) as p:
        results = p.run(jobs(sleeping_factory, still_factory))
    assert "timed out" in results[0].error
    check_ok(results[1])


def test_workers_0_runs_in_process() -> None:
    with EpisodePool(workers=0) as p:
        results = p.run(jobs("expert", raising_factory))
    check_ok(results[0])
    assert results[1].error == "ValueError: policy bug"
    assert p._ex is None  # no worker process was started


_ORPHAN_PARENT = """
import sys, time
from sim.pool import EpisodePool
if __name__ == "__main__":
    pool = EpisodePool(1).__enter__()
    print(*(p.pid for p in pool.executor._processes.values()), flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_exit_when_their_parent_is_killed(tmp_path) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN_PARENT)
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(root)})
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert workers and all(_alive(w) for w in workers)
    finally:
        parent.send_signal(signal.SIGKILL)  # no chance to shut the pool down
        parent.wait()
    deadline = time.monotonic() + 15
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [w for w in workers if _alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed parent"
