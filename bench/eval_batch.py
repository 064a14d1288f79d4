"""A policy's evaluation one episode a job against batches in lockstep (`sim.jobs.BatchJob`), on the same
scenes with the same pool: seconds each way and whether every episode ends the same.

    python -m bench.eval_batch [--per-split 10] [--workers 2] [--policy P] [--json F]

The scenes are `family.sample_scene(seed, ood)` of the four paper families, `--per-split` in distribution
and as many with every factor out, from this benchmark's own seeds (never a frozen suite; no validity check:
an episode is an episode). The policy is a seed's kept core-table bootstrap. The two ways run in turn
(single, batched, single, batched) and each figure is the faster of its two runs, because the cores may be
shared; the episodes' outcomes are compared between the first two runs (success, steps).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count
from sim.jobs import BATCH

FAMILIES = ("pick_place", "articulated", "put_inside", "stack_insert")
SEED = 7_720_000  # this benchmark's scenes
POLICY = Path("checkpoints/table1_core/seed2_round_00.safetensors")


def scenes(per_split: int) -> list[Any]:
    from sim.families import get_family

    return [get_family(f).sample_scene(SEED + 1000 * k + 100 * ood + i, ood=bool(ood))
            for k, f in enumerate(FAMILIES) for ood in (0, 1) for i in range(per_split)]


def run(policy: Path, per_split: int, workers: int, batch: int) -> dict[str, Any]:
    from coda_policy.awr import SeededPolicy
    from sim.jobs import batches_of, run_batches
    from sim.pool import EpisodeJob, EpisodePool

    specs, factory = scenes(per_split), SeededPolicy(str(policy), 0)
    took: dict[str, list[float]] = {"single": [], "batched": []}
    outcomes: dict[str, list[tuple[bool, int]]] = {}
    with EpisodePool(workers) as pool:
        for _ in range(2):
            t0 = time.perf_counter()
            jobs = [EpisodeJob(scene=s, policy=factory) for s in specs]
            single = pool.run(jobs, batch=False)
            took["single"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            batched = pool.run(jobs) if batch == BATCH else run_batches(pool, batches_of(jobs, batch))
            took["batched"].append(time.perf_counter() - t0)
            for name, got in (("single", single), ("batched", batched)):
                errors = [r.error for r in got if r.error]
                if errors:
                    raise RuntimeError(f"{name}: {len(errors)} episodes failed, first: {errors[0]}")
                outcomes.setdefault(name, [(r.success, r.steps) for r in got])
    same = sum(a == b for a, b in zip(outcomes["single"], outcomes["batched"], strict=True))
    best = {k: round(min(v), 1) for k, v in took.items()}
    return {"policy": str(policy), "episodes": len(specs), "workers": workers, "batch": batch,
            "seconds": {k: [round(x, 1) for x in v] for k, v in took.items()}, "best_s": best,
            "speedup": round(best["single"] / best["batched"], 2), "same_outcome": same,
            "successes": {k: sum(s for s, _ in v) for k, v in outcomes.items()},
            "steps": {k: sum(n for _, n in v) for k, v in outcomes.items()}}


def main(argv: list[str] | None = None) -> int:

    ap = command_parser("bench.eval_batch", __doc__)
    ap.add_argument("--per-split", type=int, default=10, help="scenes per family in and out of distribution")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--batch", type=int, default=BATCH, help=f"scenes a batch (default {BATCH})")
    ap.add_argument("--policy", type=Path, default=POLICY)
    ap.add_argument("--json", type=Path, help="write the result here")
    a = ap.parse_args(argv)
    if a.per_split < 1 or a.batch < 1:
        ap.error("--per-split and --batch must be >= 1")
    if not a.policy.is_file():
        ap.error(f"--policy {a.policy}: no such checkpoint")
    res = run(a.policy, a.per_split, a.workers, a.batch)
    text = json.dumps(res, indent=1)
    print(text)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
