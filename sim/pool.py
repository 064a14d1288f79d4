"""Run many episodes on a pool of worker processes.

Each job runs in a `spawn`ed worker with one BLAS/OpenMP thread (the workers, not BLAS, use the cores).
A job that raises comes back as an error result; a worker that dies (segfault, `os._exit`) or a job
that runs past its time limit breaks the pool, which is rebuilt so that the other jobs still run.
`workers=0` runs the jobs in this process, for debugging (no crash protection there).

This module imports numpy/mujoco only inside the worker functions, so a spawned worker's initializer
runs before them.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import sim.ray_pool  # noqa: F401  (registers the "ray" executor; Ray itself loads only when a pool starts)
from sim.jobs import (  # noqa: F401  (EpisodeResult, PolicyFactory, run_job: re-exported for callers)
    EXECUTORS,
    BatchJob,
    EpisodeJob,
    EpisodeResult,
    Executor,
    PolicyFactory,
    Pool,
    batches_of,
    failed_result,
    firsts,
    run_batch,
    run_batches,
    run_job,
    warm_worker,
    worker_env,
)


def _exit_with(parent: int, every_s: float = 1.0) -> None:
    """Exit this worker once `parent` is gone (reparented): a parent killed with SIGKILL cannot shut its
    pool down, and its workers would otherwise live on, idle, holding memory."""
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(0)


def _init_worker(mujoco_gl: str | None) -> None:
    threading.Thread(target=_exit_with, args=(os.getppid(),), name="exit-with-parent", daemon=True).start()
    os.environ.update(worker_env(mujoco_gl))
    try:  # for BLAS libraries loaded before this ran; not a dependency
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass


@contextmanager
def _child_env(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables while workers are spawned: a spawned child re-imports the parent's
    `__main__` (often numpy) before its initializer runs, so BLAS reads its thread count from these."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class EpisodePool(Pool):
    """`with EpisodePool(workers=2) as pool: results = pool.run(jobs)`; results are in job order.

    Workers are spawned, so a script that makes a pool needs the `if __name__ == "__main__":` guard.
    Without `job_timeout_s` a job that never returns blocks `run`."""

    def __init__(self, workers: int = 2, *, mujoco_gl: str | None = None,
                 job_timeout_s: float | None = None) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.workers = workers
        self.mujoco_gl = mujoco_gl
        self.job_timeout_s = job_timeout_s  # a job past this is killed (with its worker) and reported
        self.restarts = 0  # how many times a broken pool was rebuilt
        self._ex: ProcessPoolExecutor | None = None

    def _open(self) -> None:
        if self.workers:  # no workers: `run` plays the jobs in this process
            self._start()

    def close(self) -> None:
        if self._ex is not None:
            self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None

    def _start(self) -> None:
        env = worker_env(self.mujoco_gl)
        with _child_env(env):
            self._ex = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                           initializer=_init_worker, initargs=(self.mujoco_gl,))
            # one submit per worker spawns them all now, inside the environment above
            warm = [self._ex.submit(warm_worker) for _ in range(self.workers)]
        wait(warm)
        if any(f.exception() for f in warm):
            self.close()
            raise RuntimeError("episode workers could not start (is the caller's main module guarded by "
                               "`if __name__ == '__main__'`?)") from next(f.exception() for f in warm)

    def _restart(self) -> None:
        if self._ex is not None:
            self._kill_workers()
            self._ex.shutdown(wait=True, cancel_futures=True)
        self._ex = None
        self.restarts += 1
        self._start()

    @property
    def executor(self) -> ProcessPoolExecutor:
        if self._ex is None:
            self._start()
        assert self._ex is not None
        return self._ex

    def _kill_workers(self) -> None:
        assert self._ex is not None
        if hasattr(self._ex, "terminate_workers"):  # Python >= 3.14
            self._ex.terminate_workers()
            return
        for p in list((getattr(self._ex, "_processes", None) or {}).values()):
            p.kill()

    def run(self, jobs: list[EpisodeJob], progress: Callable[[EpisodeResult], None] | None = None,
            batch: bool = True) -> list[EpisodeResult]:
        """Run all jobs; `progress` is called with each result as it finishes (in finishing order). With
        `batch`, jobs that can run in lockstep (`sim.jobs.batches_of`: one policy that batches, one world
        that does) run `sim.jobs.BATCH` scenes to a worker, each episode as it would alone up to the
        policy's float rounding; the rest, and every job with `batch=False`, one episode a job."""
        results: list[EpisodeResult | None] = [None] * len(jobs)

        def finish(r: EpisodeResult) -> None:
            results[r.index] = r
            if progress:
                progress(r)

        batches = batches_of(jobs) if batch else None
        if batches is not None:
            again = self._run_batches(batches, finish)
            if again:  # a lost batch's jobs, one at a time: the scheduler isolates one that kills its worker
                _Scheduler(self, [jobs[i] for i in again],
                           lambda r: finish(replace(r, index=again[r.index]))).loop()
        elif self.workers == 0:
            for i, job in enumerate(jobs):
                finish(run_job(i, job))
        else:
            _Scheduler(self, jobs, finish).loop()
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    def _run_batches(self, batches: list[BatchJob], finish: Callable[[EpisodeResult], None]) -> list[int]:
        """Run the batches (`sim.jobs.batches_of`), at most one per worker at a time; the indices of the jobs
        of batches lost to a dead worker or past the job time limit (the pool rebuilt), to run again."""
        if self.workers == 0:
            for r in run_batches(self, batches):
                finish(r)
            return []
        starts, todo, again = firsts(batches), deque(range(len(batches))), []
        running: dict[Future, tuple[int, float]] = {}
        limit = self.job_timeout_s
        while todo or running:
            while todo and len(running) < self.workers:
                k = todo.popleft()
                running[self.executor.submit(run_batch, starts[k], batches[k])] = (
                    k, time.monotonic() + limit if limit else float("inf"))
            dl = min(d for _, d in running.values())
            done, _ = wait(running, timeout=None if dl == float("inf") else max(0.0, dl - time.monotonic()),
                           return_when=FIRST_COMPLETED)
            lost = [k for f, (k, d) in running.items() if f not in done and time.monotonic() > d]
            for f in done:
                k, _ = running.pop(f)
                try:
                    for r in f.result():
                        finish(r)
                except Exception:  # noqa: BLE001 - BrokenProcessPool, or the batch could not be sent
                    lost.append(k)
            if lost:
                if running:  # the others in flight are stopped too, and their jobs run again
                    self._kill_workers()
                wait(list(running))
                for f, (k, _) in running.items():
                    if f.exception() is None:
                        for r in f.result():
                            finish(r)
                    elif k not in lost:
                        lost.append(k)
                running.clear()
                self._restart()
                again += [starts[k] + j for k in sorted(set(lost)) for j in range(len(batches[k].scenes))]
        return sorted(again)


class _Scheduler:
    """Keeps at most `workers` jobs in flight, so when the pool breaks only those are suspects. Suspects
    of a crash are rerun one at a time: the one that breaks the pool alone is the culprit."""

    def __init__(self, pool: EpisodePool, jobs: list[EpisodeJob], finish: Callable[[EpisodeResult], None]):
        self.pool, self.jobs, self.finish = pool, jobs, finish
        self.todo: deque[int] = deque(range(len(jobs)))
        self.suspects: deque[int] = deque()
        self.running: dict[Future, tuple[int, float]] = {}  # future → (job index, deadline)

    def loop(self) -> None:
        while self.todo or self.suspects or self.running:
            self._fill()
            done, _ = wait(self.running, timeout=self._wait_s(), return_when=FIRST_COMPLETED)
            late = [i for f, (i, dl) in self.running.items() if f not in done and time.monotonic() > dl]
            if late:
                self._kill_late(late)
                continue
            broken = []
            for f in done:
                i, _ = self.running.pop(f)
                try:
                    self.finish(f.result())
                except BrokenProcessPool:
                    broken.append(i)
                except Exception as e:  # noqa: BLE001 - e.g. the job could not be pickled
                    self.finish(failed_result(i, f"{type(e).__name__}: {e}"))
            if broken:
                self._on_broken(broken)

    def _fill(self) -> None:
        if self.suspects:  # a suspect runs alone
            if not self.running:
                self._submit(self.suspects)
            return
        while self.todo and len(self.running) < self.pool.workers:
            if not self._submit(self.todo):
                return

    def _submit(self, queue: deque[int]) -> bool:
        """Submit the head of `queue`; False (and the job stays queued) if the pool is already broken
        and jobs in flight will report it."""
        i, limit = queue[0], self.pool.job_timeout_s
        try:
            f = self.pool.executor.submit(run_job, i, self.jobs[i])
        except BrokenProcessPool:  # a worker died after its last job
            if self.running:
                return False
            self.pool._restart()
            f = self.pool.executor.submit(run_job, i, self.jobs[i])
        queue.popleft()
        self.running[f] = (i, time.monotonic() + limit if limit else float("inf"))
        return True

    def _wait_s(self) -> float | None:
        dl = min((d for _, d in self.running.values()), default=float("inf"))
        return None if dl == float("inf") else max(0.0, dl - time.monotonic()) + 0.05

    def _on_broken(self, broken: list[int]) -> None:
        # every job in flight fails with BrokenProcessPool; collect them all before rebuilding
        rest = [(f, i) for f, (i, _) in self.running.items()]
        wait([f for f, _ in rest])
        for f, i in rest:
            if f.exception() is None:
                self.finish(f.result())
            else:
                broken.append(i)
        self.running.clear()
        if len(broken) == 1:
            self.finish(failed_result(broken[0], "worker died (BrokenProcessPool) while running this job"))
        else:
            self.suspects.extend(sorted(broken))
        self.pool._restart()

    def _kill_late(self, late: list[int]) -> None:
        self.pool._kill_workers()
        wait(list(self.running))
        for f, (i, _) in self.running.items():
            if f.exception() is None:  # finished just before the kill
                self.finish(f.result())
            elif i in late:
                why = f"timed out after {self.pool.job_timeout_s} s; its worker was killed"
                self.finish(failed_result(i, why))
            else:  # an innocent bystander of the kill: run it again
                self.todo.appendleft(i)
        self.running.clear()
        self.pool._restart()


def _local_check(workers: int, address: str | None) -> None:
    if address is not None:
        raise ValueError("--ray-address needs --executor ray")
    if workers < 0:
        raise ValueError(f"need workers >= 0 (0 runs episodes in this process), got {workers}")


def _local(workers: int, *, address: str | None = None, job_timeout_s: float | None = None) -> EpisodePool:
    _local_check(workers, address)
    return EpisodePool(workers, job_timeout_s=job_timeout_s)


EXECUTORS.register("local", Executor(name="local", make=_local, check=_local_check))


def make_pool(executor: str = "local", workers: int = 2, *, address: str | None = None,
              job_timeout_s: float | None = None) -> Any:
    """The episode pool of a registered executor (`EXECUTORS`): "local" (the default) is `EpisodePool`, "ray"
    is `sim.ray_pool.RayEpisodePool` (`address` None/"local" starts a local Ray instance of `workers` CPUs,
    "auto" or "HOST:PORT" joins a cluster). All speak `run(jobs)` and `executor.submit(fn, *args)` and give
    identical results."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; executors: {', '.join(EXECUTORS)}")
    return EXECUTORS.get(executor).make(workers, address=address, job_timeout_s=job_timeout_s)
