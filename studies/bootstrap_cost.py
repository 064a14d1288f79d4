"""Answers FINDINGS #34. What a table's bootstrap SFT costs, measured by running it again from nothing.

    python -m studies.bootstrap_cost --preset timed --seeds 3 --out runs/bootstrap_cost --commit

A table whose cells start from kept bootstraps (the `timed` preset: Table 1's `default` cells again, from
the policies committed under `docs/results/table1/bootstrap/`) never pays for them, so its compute line
would leave them out. This trains each seed's bootstrap again — the same `agents.run` config the table's
`bootstrap_cell` writes (round 0: seed scenes, validity, expert demonstrations, SFT) — in a run directory
of its own, times it (wall and the CPU seconds of its process tree) and its evaluation on the frozen
suites, and records `<results>/<table>/bootstrap_cost/seed<k>.json`: those times, the new policy's SHA-256
beside the kept one's, and both policies' average OOD success. The table's page adds the recorded costs to
its compute line (`experiments.table.stats.compute`). The kept bootstraps are not touched, and the cells
do not use the policies trained here. A killed run resumes (`agents.run --resume`); a recorded seed is
skipped.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from coda_policy.pretrained import canonical_sha256
from common.cli import command_parser, seed_list, worker_count
from experiments.table import suites as frozen
from experiments.table.cells import boot_home, bootstrap_cell, children_cpu_s, evaluate_cell, run_cell
from experiments.table.presets import TABLES
from experiments.table.record import ROOT, SCENES, commit_files, provenance, results_dir, sha256, table_files
from experiments.table.stats import BOOTSTRAP_COST
from experiments.table.table1 import write_table


def _avg_ood(evals: dict[str, Any]) -> float:
    fams = [v for k, v in evals.items() if k != SCENES]  # (the episodes' outcomes are not a family)
    return round(sum(f["ood"] for f in fams) / len(fams), 2)


def kept_record(preset_name: str, seed: int, results: Path) -> dict[str, Any]:
    """The seed's kept bootstrap record (what the new one is compared with); FileNotFoundError saying what
    to run when there is none."""
    path = results / boot_home(TABLES.get(preset_name)) / "bootstrap" / f"seed{seed}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no kept bootstrap for seed {seed} to compare with; run the table's "
                                f"seed first (python -m experiments.table --preset {preset_name} --seeds "
                                f"{seed},)")
    return json.loads(path.read_text())


def measure(preset_name: str, seed: int, *, workers: int, out: Path, results: Path, pool: Any,
            log: Any = print) -> Path:
    """Train, time and evaluate seed `seed`'s bootstrap again; its record's path."""
    preset = TABLES.get(preset_name)
    path = results / preset.table / BOOTSTRAP_COST / f"seed{seed}.json"
    if path.exists():
        log(f"bootstrap seed {seed}: recorded, skipped")
        return path
    kept = kept_record(preset_name, seed, results)
    cfg, _ = bootstrap_cell(preset, seed, "rules", workers, out)
    run = out / f"seed{seed}"
    log(f"bootstrap seed {seed}: training in {run}")
    t0, cpu0 = time.perf_counter(), children_cpu_s()
    run_cell(cfg, run)
    t1, cpu1 = time.perf_counter(), children_cpu_s()
    # an evaluation cache of this run's own: the table's would answer for a policy equal to the kept one
    evals = evaluate_cell(cfg, run, preset, pool, shared=out / "_eval_cache")["round_00"]
    new_sha = sha256(run / "policy" / "round_00.safetensors")
    rec = {"seed": seed, "wall_s": round(t1 - t0, 1), "run_cpu_s": round(cpu1 - cpu0, 1),
           "eval_s": round(time.perf_counter() - t1, 1), "bootstrap_sha256": new_sha,
           "kept_sha256": kept["bootstrap_sha256"],
           "same_policy": new_sha == canonical_sha256(kept["bootstrap_sha256"]),
           "avg_ood": _avg_ood(evals),
           "kept_avg_ood": _avg_ood({f: {"ood": kept["ood"][f]} for f in kept["ood"]}),
           "kept_commit": kept.get("code_commit"), "code_commit": provenance("")["commit"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1) + "\n")
    log(f"bootstrap seed {seed}: {rec['wall_s']:.0f} s wall, {rec['run_cpu_s']:.0f} CPU s, evaluation "
        f"{rec['eval_s']:.0f} s; same policy as the kept one: {rec['same_policy']}")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.bootstrap_cost", __doc__)
    ap.add_argument("--preset", default="timed", help=f"the table: one of {', '.join(TABLES.names())}")
    ap.add_argument("--seeds", type=seed_list, help="N: seeds 0..N-1; or a comma-separated list (default: "
                    "the preset's seeds)")
    ap.add_argument("--workers", type=worker_count, default=2, help="episode-pool workers")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bootstrap_cost", help="the runs")
    ap.add_argument("--results", type=Path, help="the table's results, where the records go (default "
                    "runs/results; docs/results: the committed table)")
    ap.add_argument("--commit", action="store_true",
                    help="git-commit each record and the rebuilt table (needs --results)")
    a = ap.parse_args(argv)
    try:
        preset = TABLES.get(a.preset)
        frozen.manifest()
        if a.workers < 1:
            raise ValueError("--workers must be at least 1")
        a.results = results_dir(a.results, a.commit)
        seeds = a.seeds if a.seeds is not None else list(range(preset.seeds))
        for seed in seeds:
            kept_record(a.preset, seed, a.results)
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from sim.pool import make_pool

    command = "python -m experiments.table --preset " + a.preset
    with make_pool("local", a.workers) as pool:
        for seed in seeds:
            path = measure(a.preset, seed, workers=a.workers, out=a.out, results=a.results, pool=pool)
            if (a.results / f"{preset.table}.json").exists():
                prev = json.loads((a.results / f"{preset.table}.json").read_text())
                command = prev.get("provenance", {}).get("command", command)
            write_table(a.results, preset, a.preset, command)
            if a.commit:
                commit_files([path, *table_files(a.results, preset.table)],
                             f"{preset.table}: bootstrap seed {seed} trained again and timed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
