"""Closed-loop evaluation of a saved policy on sampled scenes, on a `sim.pool.EpisodePool`.

`CheckpointPolicy(path)` is a picklable policy factory: each worker loads the checkpoint once (torch with
one thread per worker, the workers use the cores) and binds it to every scene it is given.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coda_policy.threads import WORKER_THREADS
from sim.families import get_family
from sim.pool import EpisodeJob, EpisodePool, EpisodeResult
from sim.scene import SceneSpec

_LOADED: dict[tuple[str, float], Any] = {}  # per process: (path, mtime) → policy


@dataclass(frozen=True)
class CheckpointPolicy:
    """Policy factory for pool workers: `factory(scene) -> policy callable` from a checkpoint file."""

    path: str
    # torch intra-op threads in the process that calls the factory (a pool worker; see coda_policy.threads)
    threads: int = WORKER_THREADS

    def load(self) -> Any:
        import torch

        from coda_policy.registry import load_policy

        torch.set_num_threads(self.threads)
        key = (str(self.path), Path(self.path).stat().st_mtime)
        if key not in _LOADED:
            _LOADED.clear()
            _LOADED[key] = load_policy(self.path)
        return _LOADED[key]

    def __call__(self, scene: SceneSpec) -> Callable:
        return self.load().bind(scene)


@dataclass(frozen=True)
class EvalResult:
    """Success over a set of scenes (errors count as failures and are listed)."""

    name: str
    results: list[EpisodeResult] = field(repr=False)

    @property
    def n(self) -> int:
        return len(self.results)

    @property
    def successes(self) -> int:
        return sum(r.success for r in self.results)

    @property
    def success_rate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    @property
    def errors(self) -> list[str]:
        return [r.error for r in self.results if r.error]

    def failing_phases(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            if not r.success and r.failing_phase:
                out[r.failing_phase] = out.get(r.failing_phase, 0) + 1
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n": self.n,
            "success_rate": self.success_rate,
            "failing_phases": self.failing_phases(),
            "errors": len(self.errors),
        }


def eval_scenes(family: str, seeds: Sequence[int], ood: bool = False) -> list[SceneSpec]:
    """`family.sample_scene(seed, ood)` for each seed."""
    fam = get_family(family)
    return [fam.sample_scene(int(s), ood=ood) for s in seeds]


def evaluate(
    checkpoint: str | Path,
    scenes: Sequence[SceneSpec],
    pool: EpisodePool,
    *,
    name: str = "eval",
    out_dir: str | Path | None = None,
    record_every: int = 4,
    max_steps: int | None = None,
    progress: Callable[[EpisodeResult], None] | None = None,
) -> EvalResult:
    """Run the checkpoint on every scene (closed loop, chunks executed as the policy returns them)."""
    factory = CheckpointPolicy(str(checkpoint))
    jobs = [
        EpisodeJob(
            scene=s,
            policy=factory,
            record_every=record_every,
            max_steps=max_steps,
            out=None if out_dir is None else Path(out_dir) / f"{name}_{i:04d}_{s.scene_id}",
        )
        for i, s in enumerate(scenes)
    ]
    return EvalResult(name, pool.run(jobs, progress))


def latency_ms(policy: Any, scene: SceneSpec, n: int = 30) -> float:
    """Median wall time (ms) of one `select_action` (featurize + encoder + flow integration) on the scene's
    first state, after one warm-up call."""
    from sim.env import SimEnv
    from sim.episode import make_observation

    obs = make_observation(scene, SimEnv(scene).reset(), 0)
    policy.reset(scene)
    policy.select_action(obs)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        policy.select_action(obs)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)
