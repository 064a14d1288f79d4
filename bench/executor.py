"""Episode throughput of the two executors side by side: `python -m bench.executor [--episodes 16]
[--repeats 3] [--workers 2] [--run RUN_DIR]`.

The same batch of expert episodes (every family, fixed scenes) runs on the local process pool and on a local
Ray instance with the same number of workers, the two alternating `repeats` times (the cores are shared and
noisy: medians, and their ratio, from one run). Also measured: the per-task overhead of each executor (a
batch of no-op tasks, seconds per task). With `--run`, a finished run's own per-node costs
(`metrics.jsonl`) give the share of a round that is simulation work, and the Amdahl estimate of a round's
time on N machines of this size: serial part (LLM calls, training, the loop's own bookkeeping) + simulation
/ (N × Ray's throughput relative to the local pool, which includes its per-task overhead). It is an upper
bound on the speed-up: a round's batches are sized by the loop (a verification batch of 12 episodes cannot use
more than 12 workers).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count

SIM_NODES = ("validate", "rollout", "verify", "measure")  # the nodes whose work is episodes


def _noop() -> int:
    return 0


def _jobs(n: int) -> list[Any]:
    import numpy as np

    from sim.families import get_family, our_families
    from sim.pool import EpisodeJob

    fams = our_families()
    jobs = []
    for i in range(n):
        fam = get_family(fams[i % len(fams)])
        jobs.append(EpisodeJob(scene=fam.make_scene(fam.sample_factors(np.random.default_rng(i)), seed=i)))
    return jobs


def measure(workers: int, episodes: int, repeats: int, tasks: int = 200) -> dict[str, dict[str, float]]:
    from sim.pool import make_pool

    jobs = _jobs(episodes)
    pools = {name: make_pool(name, workers).__enter__() for name in ("local", "ray")}
    rows: dict[str, dict[str, list[float]]] = {n: {"batch_s": [], "steps": [], "task_s": []} for n in pools}
    try:
        for _ in range(repeats):
            for name, pool in pools.items():
                t0 = time.perf_counter()
                results = pool.run(jobs)
                rows[name]["batch_s"].append(time.perf_counter() - t0)
                rows[name]["steps"].append(sum(r.steps for r in results))
                bad = [r.error for r in results if r.error]
                if bad:
                    raise RuntimeError(f"{name}: {len(bad)} episodes failed, e.g. {bad[0]}")
                t0 = time.perf_counter()
                [f.result() for f in [pool.executor.submit(_noop) for _ in range(tasks)]]
                rows[name]["task_s"].append((time.perf_counter() - t0) / tasks)
    finally:
        for pool in pools.values():
            pool.close()
    out = {}
    for name, r in rows.items():
        batch = statistics.median(r["batch_s"])
        out[name] = {"episodes_per_s": episodes / batch, "steps_per_s": statistics.median(r["steps"]) / batch,
                     "batch_s": batch, "task_overhead_ms": 1000 * statistics.median(r["task_s"])}
    return out


def round_costs(run: Path) -> dict[str, float]:
    """Mean seconds per round (rounds ≥ 1) of the simulation nodes and of everything else."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    rounds = [r for r in rows if r.get("round", 0) > 0 and r.get("cost")]
    if not rounds:
        raise ValueError(f"{run}/metrics.jsonl has no finished round with per-node costs")
    sim = statistics.mean(sum(r["cost"].get(n, {}).get("wall_s", 0.0) for n in SIM_NODES) for r in rounds)
    total = statistics.mean(sum(c.get("wall_s", 0.0) for c in r["cost"].values()) for r in rounds)
    episodes = statistics.mean(sum(r["cost"].get(n, {}).get("episodes", 0) for n in SIM_NODES)
                               for r in rounds)
    return {"sim_s": sim, "serial_s": total - sim, "round_s": total, "episodes": episodes,
            "rounds": len(rounds)}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("bench.executor", __doc__)
    ap.add_argument("--episodes", type=int, default=16, help="expert episodes per batch (families in turn)")
    ap.add_argument("--repeats", type=int, default=3, help="batches per executor (alternating)")
    ap.add_argument("--workers", type=worker_count, default=2, help="workers of each executor")
    ap.add_argument("--run", type=Path, help="a finished run directory: its round costs give the N-machine "
                    "estimate")
    a = ap.parse_args(argv)
    if min(a.episodes, a.repeats, a.workers) < 1:
        print("error: --episodes, --repeats and --workers must be at least 1", file=sys.stderr)
        return 2
    if a.run is not None and not (a.run / "metrics.jsonl").is_file():
        print(f"error: --run {a.run} has no metrics.jsonl", file=sys.stderr)
        return 2
    res = measure(a.workers, a.episodes, a.repeats)
    print(f"{a.episodes} expert episodes per batch, {a.workers} workers, median of {a.repeats} alternating "
          "batches")
    print("| executor | episodes/s | control steps/s | batch s | per-task overhead ms |")
    print("|---|---|---|---|---|")
    for name, r in res.items():
        print(f"| {name} | {r['episodes_per_s']:.2f} | {r['steps_per_s']:.0f} | {r['batch_s']:.1f} | "
              f"{r['task_overhead_ms']:.2f} |")
    ratio = res["ray"]["episodes_per_s"] / res["local"]["episodes_per_s"]
    print(f"Ray / local episodes/s: {ratio:.2f}")
    if a.run is not None:
        c = round_costs(a.run)
        print(f"\n{a.run}: {c['rounds']} rounds, mean {c['round_s']:.0f} s a round: simulation "
              f"{c['sim_s']:.0f} s ({100 * c['sim_s'] / c['round_s']:.0f} %, {c['episodes']:.0f} episodes), "
              f"serial {c['serial_s']:.0f} s")
        print("| machines | estimated round s | speed-up |")
        print("|---|---|---|")
        for n in (1, 2, 4, 8, 16):
            est = c["serial_s"] + c["sim_s"] / (n * ratio)  # ratio: Ray's throughput, its overhead included
            print(f"| {n} | {est:.0f} | {c['round_s'] / est:.2f}× |")
        print(f"Amdahl limit (serial part only): {c['round_s'] / c['serial_s']:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
