"""How informative is the rules critic, and does verification confirm it? Measured on policies with a
known weakness.

    python -m bench.agents.critic [--n 24] [--verify-n 12] [--workers 2]

A *handicapped expert* is the scripted expert with one flaw whose responsible factor we know:
`loose_grip` closes the fingers only to ~3.8 cm (objects narrower than that are never squeezed: the
factor is the object's size), `short_reach` cannot move the hand beyond 0.66 m from the robot's base
(far objects or targets: their positions). On in-distribution pick-place scenes, every failure is
diagnosed by the rules critic and by two naive baselines (the factor whose value is most atypical; a
random factor); accuracy = the diagnosis names a factor of the true kind. Then the first diagnoses are
verified for real (edited programs in the sandbox, the handicapped policy rolled out on a pool), next to
a deliberately wrong diagnosis (colour), which should not validate.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass

import numpy as np

from common.cli import command_parser, worker_count
from sim.builder import ROBOT_BASE
from sim.episode import ExpertPolicy, Observation
from sim.scene import SceneSpec


@dataclass(frozen=True)
class Handicapped:
    """Policy factory: the scripted expert, its action altered by `alter` (the handicap) at every step."""

    def alter(self, a: np.ndarray, obs: Observation) -> None:
        raise NotImplementedError

    def __call__(self, scene: SceneSpec) -> object:
        expert = ExpertPolicy(scene)

        def act(obs: Observation) -> np.ndarray:
            a = expert(obs)[0].copy()
            self.alter(a, obs)
            return a[None]

        return act


@dataclass(frozen=True)
class LooseGrip(Handicapped):
    """The expert, closing the gripper with command `close` (≈ 4 cm × (1 − close))."""

    close: float = 0.05

    def alter(self, a: np.ndarray, obs: Observation) -> None:
        a[6] = min(a[6], self.close)


@dataclass(frozen=True)
class ShortReach(Handicapped):
    """The expert, unable to move the hand outwards past `radius` from the robot's base."""

    radius: float = 0.66

    def alter(self, a: np.ndarray, obs: Observation) -> None:
        rel = obs.state.ee_pos[:2] - np.array(ROBOT_BASE[:2])
        r = float(np.linalg.norm(rel))
        if r > self.radius:
            out = rel / r
            a[:2] -= max(float(a[:2] @ out), 0.0) * out


HANDICAPS = {"loose_grip": (LooseGrip(), {"subject_size"}), "short_reach": (ShortReach(), {"subject_pos",
                                                                                            "target_pos"})}


def _baselines(sm, names: set[str], rng: np.random.Generator) -> tuple[str, str]:
    readings = [r for r in sm.factors if r.name in names]
    atypical = max(readings, key=lambda r: (abs(r.position), r.name)).name
    return atypical, readings[int(rng.integers(len(readings)))].name


def _score(failed: list, gen, truth: set[str], rng: np.random.Generator) -> tuple[list, dict[str, int]]:
    """Rules diagnoses of the failures, and how often each critic named a factor of the true kind."""
    from agents.critic.diagnose import diagnose, summarize_failure
    from programs.factor_space import kind_of

    names = {f.name for f in gen.factors}
    hits = {"rules": 0, "most_atypical": 0, "random": 0}
    dxs = []
    for ep in failed:
        dx = diagnose(ep, gen)
        dxs.append(dx)
        atyp, rand = _baselines(summarize_failure(ep, schema=gen.factors), names, rng)
        for key, name in (("rules", dx.factor), ("most_atypical", atyp), ("random", rand)):
            hits[key] += kind_of(gen.family, name) in truth
    return dxs, hits


def _verify(dx, gen, batch, n: int, seed: int) -> None:
    from agents.critic.verify import VerifyConfig, run_verification

    t0 = time.perf_counter()
    res = run_verification(dx, gen, batch, n=n, rng=np.random.default_rng(seed), config=VerifyConfig())
    v = res.verdict
    print(f"  verify {dx.factor} {dx.edit[dx.factor]} vs control {res.control_factor} {res.control_edit}: "
          f"{v.status} (targeted {v.targeted_failure_rate:.2f} vs control {v.control_failure_rate:.2f}, "
          f"p={v.p_value:.4f}, n={v.n}; {time.perf_counter() - t0:.0f} s)")


def run(n: int, verify_n: int, workers: int, seed: int) -> None:
    """Roll out each handicap on `n` scenes, score the critics, verify the first diagnosis and a wrong one."""
    from agents.critic.verify import episode_rollout, sandbox_run_batch
    from memory.types import Diagnosis
    from programs.seeds import seed_library
    from sandbox import PoolConfig, SandboxPool
    from sim.episode import Episode
    from sim.families import get_family
    from sim.pool import EpisodeJob, EpisodePool

    gen = seed_library()["pick_place"][0]
    rng = np.random.default_rng(seed)
    scenes = [get_family("pick_place").sample_scene(seed * 1000 + i) for i in range(n)]
    with (EpisodePool(workers) as pool, SandboxPool(PoolConfig(workers=1)) as sandbox,
          tempfile.TemporaryDirectory(prefix="critic_bench_") as tmp):
        for label, (policy, truth) in HANDICAPS.items():
            t0 = time.perf_counter()
            jobs = [EpisodeJob(scene=s, policy=policy, out=f"{tmp}/{label}_{i}")
                    for i, s in enumerate(scenes)]
            failed = [Episode.load(r.path) for r in pool.run(jobs) if r.ok and not r.success]
            dxs, hits = _score(failed, gen, truth, rng)
            k = max(len(failed), 1)
            print(f"{label}: {len(failed)}/{n} failed ({time.perf_counter() - t0:.0f} s); factor of the true "
                  f"kind {sorted(truth)}: " + ", ".join(f"{key} {v}/{len(failed)} ({v / k:.0%})"
                                                       for key, v in hits.items()))
            print("  rules diagnoses: " + ", ".join(f"{d.factor}@{d.phase}" for d in dxs))
            if not dxs:
                continue
            batch = sandbox_run_batch(sandbox, episode_rollout(pool, policy))
            wrong = Diagnosis(episode_id=dxs[0].episode_id, factor_group="attribute", factor="color",
                              phase=dxs[0].phase, explanation="(deliberately wrong)", edit={"color": "blue"},
                              side="values")
            for dx in (dxs[0], wrong):
                _verify(dx, gen, batch, verify_n, seed)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = command_parser("bench.agents.critic", __doc__)
    ap.add_argument("--n", type=int, default=24, help="scenes per handicap")
    ap.add_argument("--verify-n", type=int, default=12, help="episodes per verification batch")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    run(args.n, args.verify_n, args.workers, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
