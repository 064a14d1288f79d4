"""The episode pool on a Ray cluster: the same `run(jobs)` / `executor.submit(fn, *args)` surface as
`sim.pool.EpisodePool`, so the loop's simulation work (validate, roll out, verify, evaluate) runs on Ray
unchanged (`--executor ray`).

    with RayEpisodePool(workers=2) as pool:              # a local Ray instance with 2 CPUs, stopped at exit
        results = pool.run(jobs)
    RayEpisodePool(address="auto")                        # join the cluster `ray start --head` made

Tasks carry scene specs and picklable policy factories (a checkpoint path and a seed), never live simulator
objects; each returns its `EpisodeResult` tagged with the job's index, and `run` assembles them in job order
whatever order they finish in. Faults, the Ray way:

- a worker process or node that dies is retried by Ray (`max_retries`); a job that still cannot finish comes
  back as an error result, like the local pool's;
- a hard per-episode limit (`job_timeout_s`) is enforced inside the worker (SIGALRM), so a stuck job fails
  alone and frees its worker;
- a saved episode is written atomically under the job's own path (`Episode.save`), so a retried job
  rewrites the same file and no episode is ever duplicated.

Episodes depend only on the scene and the policy's seed, so the local pool and Ray give identical results
(`tests/sim/test_ray_pool.py`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sim.jobs import (
    EXECUTORS,
    EpisodeJob,
    EpisodeResult,
    Executor,
    Pool,
    batches_of,
    failed_result,
    fits_here,
    run_batches,
    run_job,
    warm_worker,
    worker_env,
)

MAX_RETRIES = 3  # Ray's retries of a task whose worker process died


class JobTimeout(BaseException):
    """A job ran past the pool's `job_timeout_s`. A BaseException, like KeyboardInterrupt, so that no
    `except Exception` inside the episode (a scene compile, a policy) turns it into another error."""


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Raise `JobTimeout` in this (worker) process after `seconds`."""
    if not seconds:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise JobTimeout(f"job ran past its {seconds:.0f} s limit")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_address(address: str | None) -> None:
    """Before any work: `address` names a Ray cluster that can be reached (ValueError saying what to do).
    None/"local" starts one here; "auto" needs a cluster this machine started (`ray start --head`) or
    $RAY_ADDRESS; "HOST:PORT" must accept a connection."""
    import socket
    import tempfile

    if address in (None, "local"):
        return
    if address == "auto":
        marker = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if not os.environ.get("RAY_ADDRESS") and not marker.exists():
            raise ValueError("--ray-address auto: no Ray cluster was started on this machine; start one with "
                             "`ray start --head`, give HOST:PORT, or use --ray-address local")
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--ray-address must be local, auto or HOST:PORT, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise ValueError(f"--ray-address {address}: nothing answers there ({e.strerror or e}); is the head "
                         "node running (`ray start --head --port PORT`)?") from None


def _episode(index: int, job: EpisodeJob, timeout_s: float | None) -> EpisodeResult:
    try:
        with _alarm(timeout_s):
            return run_job(index, job)
    except JobTimeout as e:  # raised between two steps of the episode (run_job catches inside the episode)
        return EpisodeResult(index=index, success=False, failing_phase=None, steps=0, wall_s=timeout_s or 0.0,
                             path=None, error=str(e))


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    return fn(*args)


class RayExecutor:
    """`submit(fn, *args)` → a `concurrent.futures.Future`, as a process pool's executor gives."""

    def __init__(self, remote: Any) -> None:
        self._remote = remote

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self._remote.remote(fn, args).future()


class RayEpisodePool(Pool):
    """Episodes as Ray tasks. `address=None` starts a local Ray instance of `workers` CPUs (stopped by
    `close`); `"auto"` or `"HOST:PORT"` joins a running cluster (left running)."""

    def __init__(self, workers: int = 2, *, address: str | None = None, job_timeout_s: float | None = None,
                 max_retries: int = MAX_RETRIES, mujoco_gl: str | None = None) -> None:
        if workers < 1:
            raise ValueError(f"a Ray pool needs workers >= 1 (CPUs of the local instance), got {workers}")
        self.workers = workers
        self.address = address
        self.job_timeout_s = job_timeout_s
        self.max_retries = max_retries
        self.mujoco_gl = mujoco_gl or os.environ.get("MUJOCO_GL")
        self.restarts = 0  # the local pool's counter; Ray's own retries are not counted here
        self._started = False
        self._episode: Any = None
        self._executor: RayExecutor | None = None

    def _open(self) -> None:
        self._start()

    def _start(self) -> None:
        import ray

        if self._episode is not None:
            return
        env = worker_env(self.mujoco_gl)
        if not ray.is_initialized():
            local = self.address in (None, "local")
            try:
                ray.init(address=None if local else self.address, num_cpus=self.workers if local else None,
                         include_dashboard=False, log_to_driver=False, configure_logging=False,
                         runtime_env={"env_vars": env})
            except ConnectionError as e:
                raise RuntimeError(f"no Ray cluster at {self.address!r} ({e}); start one with "
                                   "`ray start --head` or use --ray-address local") from e
            self._started = True
        opts = {"num_cpus": 1, "max_retries": self.max_retries, "retry_exceptions": False}
        self._episode = ray.remote(_episode).options(**opts)
        self._executor = RayExecutor(ray.remote(_call).options(**opts))
        # start the workers now (importing the simulator and building the robot's meshes take seconds there)
        ray.get([self._executor._remote.remote(warm_worker, ()) for _ in range(self.workers)])

    def close(self) -> None:
        import ray

        if self._started and ray.is_initialized():
            ray.shutdown()
        self._started, self._episode, self._executor = False, None, None

    @property
    def executor(self) -> RayExecutor:
        self._start()
        assert self._executor is not None
        return self._executor

    def run(self, jobs: list[EpisodeJob], progress: Callable[[EpisodeResult], None] | None = None,
            batch: bool = True) -> list[EpisodeResult]:
        """Run all jobs on the cluster; results in job order, `progress` called in finishing order. With
        `batch`, jobs that can run in lockstep do, `BATCH` scenes a task (`EpisodePool.run`); a lost task's
        scenes report it."""
        import ray

        self._start()
        batches = batches_of(jobs) if batch else None
        if batches is not None:
            return run_batches(self, batches, progress)
        refs = {self._episode.remote(i, job, self.job_timeout_s): i for i, job in enumerate(jobs)}
        results: list[EpisodeResult | None] = [None] * len(jobs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = refs[ref]
                try:
                    r = ray.get(ref)
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                        ray.exceptions.TaskUnschedulableError, ray.exceptions.RayTaskError) as e:
                    # retries exhausted (or the job could not be unpickled there): this job's result
                    r = failed_result(i, f"{type(e).__name__}: {str(e).splitlines()[0]}")
                results[i] = r
                if progress:
                    progress(r)
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]


def _ray(workers: int, *, address: str | None = None, job_timeout_s: float | None = None) -> RayEpisodePool:
    return RayEpisodePool(max(1, workers), address=address, job_timeout_s=job_timeout_s)


def _ray_check(workers: int, address: str | None) -> None:
    del address
    if workers < 1:
        raise ValueError("executor 'ray' needs workers >= 1 (workers 0 runs episodes in this process)")


def _ray_preflight(workers: int, address: str | None) -> None:
    """The cluster answers; a local instance's CPUs (`workers`) fit this machine."""
    check_address(address)
    if address in (None, "local"):
        fits_here(workers, address)


EXECUTORS.register("ray", Executor(name="ray", make=_ray, check=_ray_check, preflight=_ray_preflight))
