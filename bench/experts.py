"""Expert success per task family, in and out of distribution, with every failure and its phase.

    python -m bench.experts --n 100 [--families pick_place ...] [--workers 2] [--json runs/experts.json]

Scenes are `family.sample_scene(seed, ood)` for seeds 0..n-1; `--check` exits 1 when a family is below
the targets (95 % in distribution, 80 % out of distribution).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from common.cli import comma_list, command_parser, worker_count
from common.cli import console as cli_console

TARGETS = {"id": 0.95, "ood": 0.80}


def evaluate(families: list[str], n: int, workers: int) -> list[dict]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sim.families import get_family
    from sim.pool import EpisodeJob, EpisodePool

    jobs, keys = [], []
    for f in families:
        fam = get_family(f)
        for split in ("id", "ood"):
            for seed in range(n):
                jobs.append(EpisodeJob(scene=fam.sample_scene(seed, ood=split == "ood")))
                keys.append((f, split, seed))
    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*cols) as bar, EpisodePool(workers) as pool:
        task = bar.add_task("expert episodes", total=len(jobs))
        results = pool.run(jobs, progress=lambda r: bar.advance(task))
    rows = []
    for f in families:
        for split in ("id", "ood"):
            rs = [(k[2], r) for k, r in zip(keys, results, strict=True) if k[:2] == (f, split)]
            fails = [{"seed": s, "phase": r.failing_phase, "error": r.error} for s, r in rs if not r.success]
            rows.append(
                {
                    "family": f,
                    "split": split,
                    "n": len(rs),
                    "success": sum(r.success for _, r in rs),
                    "rate": sum(r.success for _, r in rs) / max(len(rs), 1),
                    "failures": fails,
                    "mean_steps": sum(r.steps for _, r in rs) / max(len(rs), 1),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("bench.experts", __doc__)
    ap.add_argument("--n", type=int, default=100, help="scenes per family and distribution")
    ap.add_argument("--families", type=comma_list(), default=[],
                    help="comma-separated task families (default: every registered one)")
    ap.add_argument("--workers", type=worker_count, default=2, help="episode-pool worker processes")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file")
    ap.add_argument("--check", action="store_true", help="exit 1 when an expert is below its target rate")
    a = ap.parse_args(argv)
    from rich.table import Table

    from sim.families import FAMILIES, our_families

    try:
        families = a.families or our_families()
        for f in families:
            FAMILIES.get(f)
    except KeyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = evaluate(families, a.n, a.workers)
    t = Table(title=f"scripted experts, {a.n} scenes per split ({time.perf_counter() - t0:.0f} s)")
    for c in ("family", "split", "success", "mean steps", "failures (seed: phase)"):
        t.add_column(c)
    ok = True
    for r in rows:
        below = r["rate"] < TARGETS[r["split"]]
        ok &= not below
        fails = ", ".join(f"{x['seed']}: {x['phase'] or x['error']}" for x in r["failures"]) or "-"
        t.add_row(
            r["family"],
            r["split"],
            f"{r['success']}/{r['n']} ({100 * r['rate']:.0f}%)" + (" < target" if below else ""),
            f"{r['mean_steps']:.0f}",
            fails,
        )
    cli_console().print(t)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(rows, indent=1))
    return 1 if a.check and not ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
