"""What every executor of episodes runs and returns (`sim.pool.EpisodePool` on local processes,
`sim.ray_pool.RayEpisodePool` on Ray): the job, its result, running one job in a worker, warming a worker
up, and the registry of executors both register in (`make_pool` in `sim.pool` picks one by name).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from common.machine import available_mb, cpu_count, machine_workers
from common.registry import Registry

if TYPE_CHECKING:
    from sim.records import Policy
    from sim.scene import SceneSpec

PolicyFactory = Callable[["SceneSpec"], "Policy"]
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def worker_env(mujoco_gl: str | None) -> dict[str, str]:
    """The environment of every episode worker, local or Ray: one BLAS/OpenMP thread each (a pool of
    workers, not threads inside one), and `MUJOCO_GL` when one is given."""
    return {k: "1" for k in ONE_THREAD} | ({"MUJOCO_GL": mujoco_gl} if mujoco_gl else {})


@dataclass(frozen=True, kw_only=True)
class EpisodeJob:
    """One episode to run. The policy factory must be picklable (a module-level function or class)."""

    scene: SceneSpec
    # "expert" (the family's scripted expert) or a factory `factory(scene) -> policy`
    policy: Literal["expert"] | PolicyFactory = "expert"
    # where to save the episode (`Episode.save`), or None to keep nothing on disk
    out: str | Path | None = None
    # control-step limit; None uses the scene's own `max_steps`
    max_steps: int | None = None
    # keep every n-th state in the saved episode
    record_every: int = 1


@dataclass(frozen=True, kw_only=True)
class EpisodeResult:
    """What one job gave. `error` is set (and `success` False) when the job raised or its worker died."""

    index: int  # position of the job in the list passed to `run`
    success: bool
    failing_phase: str | None
    steps: int
    wall_s: float  # seconds the job took in its worker (0 when the worker died)
    cpu_s: float = 0.0  # CPU seconds of the worker on this job (below wall_s when cores are shared)
    path: Path | None  # the saved .npz, when the job had `out`
    error: str | None = None
    trace: str | None = None  # the worker's traceback, when the job raised

    @property
    def ok(self) -> bool:
        return self.error is None


def run_job(index: int, job: EpisodeJob) -> EpisodeResult:
    """Run one job here; exceptions become an error result."""
    from sim.episode import run_episode

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        if isinstance(job.policy, str):
            if job.policy != "expert":
                raise ValueError(f"unknown policy {job.policy!r}: use 'expert' or a factory(scene) -> policy")
            policy, name = None, "expert"
        else:
            policy = job.policy(job.scene)
            name = getattr(job.policy, "__qualname__", type(job.policy).__qualname__)
        ep = run_episode(job.scene, policy, max_steps=job.max_steps, record_every=job.record_every,
                         policy_name=name)
        path = ep.save(job.out) if job.out is not None else None
    except Exception as e:  # noqa: BLE001 - any failure of a job is that job's result
        return EpisodeResult(index=index, success=False, failing_phase=None, steps=0,
                             wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, path=None,
                             error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
    return EpisodeResult(index=index, success=ep.success, failing_phase=ep.failing_phase, steps=ep.steps,
                         wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, path=path)


@dataclass(frozen=True, kw_only=True)
class BatchJob:
    """Episodes of one policy in several scenes of one world, run in lockstep in one worker so that the
    policy acts for all of them in one forward pass (`sim.episode.run_episodes`). `policy` is a picklable
    factory with `batch(scenes)` → a `BatchPolicy` (e.g. `coda_policy.awr.SeededPolicy`)."""

    scenes: tuple[SceneSpec, ...]
    policy: Any
    max_steps: int | None = None
    # where to save each scene's episode (`Episode.save`; None: nothing on disk); empty: nothing saved
    outs: tuple[str | Path | None, ...] = ()
    record_every: int = 1


# scenes one worker runs in lockstep: the object-token policy's forward pass for 16 episodes costs about
# 2.6× that for one (29 against 11 ms, one thread), and a batch of 16 runs an evaluation 1.8× faster
BATCH = 16


def batches_of(jobs: list[EpisodeJob], size: int = BATCH) -> list[BatchJob] | None:
    """`jobs` as lockstep batches of `size` scenes in order, when they can run so: one policy factory that
    acts in many episodes at once (`batches()`), one step limit and recording, and scenes of one world that
    runs batches (`sim.episode.batch_world`); None otherwise (run them one episode per job)."""
    from sim.episode import batch_world

    if not jobs or isinstance(jobs[0].policy, str) or not hasattr(jobs[0].policy, "batches"):
        return None
    head = jobs[0]
    if any((j.policy, j.max_steps, j.record_every) != (head.policy, head.max_steps, head.record_every)
           for j in jobs) or batch_world([j.scene for j in jobs]) is None or not head.policy.batches():
        return None
    return [BatchJob(scenes=tuple(j.scene for j in jobs[k:k + size]), policy=head.policy,
                     max_steps=head.max_steps, outs=tuple(j.out for j in jobs[k:k + size]),
                     record_every=head.record_every) for k in range(0, len(jobs), size)]


def run_batch(first: int, job: BatchJob) -> list[EpisodeResult]:
    """Run a batch here; its results are indexed from `first`, in scene order. A scene whose episode raised
    (or a batch that could not start) gives error results, as `run_job` does; each result's seconds are the
    batch's shared evenly."""
    from sim.episode import run_episodes

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        act = job.policy.batch(list(job.scenes))
        if act is None:
            raise ValueError(f"{job.policy!r} acts one episode at a time: run EpisodeJobs")
        eps: list[Any] = run_episodes(job.scenes, act, max_steps=job.max_steps, record_every=job.record_every,
                                      policy_name=type(job.policy).__qualname__)
        trace = None
        paths: list[Path | None] = [None] * len(eps)
        for k, (ep, out) in enumerate(zip(eps, job.outs, strict=False)):
            if out is not None and not isinstance(ep, Exception):
                paths[k] = ep.save(out)
    except Exception as e:  # noqa: BLE001 - a batch that cannot run is each of its episodes' error
        eps, trace, paths = [e] * len(job.scenes), traceback.format_exc(), [None] * len(job.scenes)
    wall, cpu = (time.perf_counter() - t0) / len(job.scenes), (time.process_time() - c0) / len(job.scenes)
    out = []
    for k, ep in enumerate(eps):
        if isinstance(ep, Exception):
            out.append(EpisodeResult(index=first + k, success=False, failing_phase=None, steps=0, wall_s=wall,
                                     cpu_s=cpu, path=None, error=f"{type(ep).__name__}: {ep}",
                                     trace=trace or "".join(traceback.format_exception(ep))))
        else:
            out.append(EpisodeResult(index=first + k, success=ep.success, failing_phase=ep.failing_phase,
                                     steps=ep.steps, wall_s=wall, cpu_s=cpu, path=paths[k]))
    return out


def firsts(batches: list[BatchJob]) -> list[int]:
    """The index of each batch's first scene among all the batches' scenes."""
    return [sum(len(b.scenes) for b in batches[:k]) for k in range(len(batches))]


def run_batches(pool: Any, jobs: list[BatchJob],
                progress: Callable[[EpisodeResult], None] | None = None) -> list[EpisodeResult]:
    """Every batch on `pool`'s workers (in this process when it has none), the results of all their scenes
    in order; a batch that could not run (its worker lost) gives each of its scenes an error result. The
    local pool's own `run` batches jobs itself, with a lost batch's jobs run again one job at a time."""
    starts = firsts(jobs)
    if not getattr(pool, "workers", 0):
        out = []
        for k, job in enumerate(jobs):
            for r in run_batch(starts[k], job):
                out.append(r)
                if progress:
                    progress(r)
        return out
    futures = [pool.executor.submit(run_batch, starts[k], job) for k, job in enumerate(jobs)]
    out = []
    for k, f in enumerate(futures):
        try:
            got = f.result()
        except Exception as e:  # noqa: BLE001 - the batch's scenes report it
            got = [failed_result(starts[k] + j, f"{type(e).__name__}: {e}")
                   for j in range(len(jobs[k].scenes))]
        for r in got:
            out.append(r)
            if progress:
                progress(r)
    return out


def failed_result(index: int, why: str) -> EpisodeResult:
    """The result of a job that could not run: `why` is its error."""
    return EpisodeResult(index=index, success=False, failing_phase=None, steps=0, wall_s=0.0, path=None,
                         error=why)


def warm_worker() -> int:
    """Import the simulator and compile one scene before the first job: a process's first compile builds
    the robot's meshes (1-5 s on busy cores), which should not count against a job's time limit."""
    from sim.builder import build_scene
    from sim.families import get_family

    try:
        fam = get_family("pick_place")
        build_scene(fam.make_scene(fam.default_factors()))
    except Exception:  # noqa: BLE001 - only a warm-up; a broken family shows up in its own jobs
        pass
    return os.getpid()


def fits_here(workers: int, address: str | None = None) -> None:
    """ValueError when `workers` episode processes would not fit this machine (`common.machine`)."""
    del address  # the workers run here whatever the address
    if workers > (limit := machine_workers()):
        raise ValueError(f"--workers {workers}: this machine runs at most {limit} episode workers "
                         f"({cpu_count()} CPUs, {available_mb() // 1024} GiB free); give at most {limit}")


class Pool:
    """Both episode pools as a context manager: `with make_pool(...) as pool:` starts the workers (`_open`)
    and closes them (`close`) however the block ends."""

    def __enter__(self) -> Self:
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Executor:
    """Where batched episodes run, as `make_pool` and a run's checks see it."""

    name: str
    # (workers, *, address, job_timeout_s) → a pool that speaks `run(jobs)` and `executor.submit(fn, *args)`
    make: Callable[..., Any]
    # (workers, address) → None, or ValueError naming what this executor cannot take (pure: a config check)
    check: Callable[[int, str | None], None]
    # (workers, address) → None, or ValueError saying what is missing, before any work: the workers fit this
    # machine, the cluster answers (a probe of this machine or the network; never run in a config)
    preflight: Callable[[int, str | None], None] = fits_here


# each executor module registers its own (`sim.pool`: "local", `sim.ray_pool`: "ray");
# `sim.pool.make_pool` and a run's checks ask here
EXECUTORS: Registry[Executor] = Registry("executor")
