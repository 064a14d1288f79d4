"""Answers the choice of CoDA's allocation score (issue #39, item 2). Learning progress, learnability p(1 − p)
or both: which should rank CoDA's arms? A development measurement, for choosing honestly.

    python -m studies.allocation_dev                               # every score, seeds 0-2
    python -m studies.allocation_dev --scores lp,lp+learnability --seeds 0,1 --lp-runs runs/table1_core

Each (score, seed) is a CoDA cell of the `core` table's configuration (three rounds from the seed's kept
Table 1 bootstrap) whose `RunConfig.allocation.score` is the one named, run with `agents.run` like a table
cell (a killed study resumes: finished cells are skipped, an interrupted one continues). Its final policy is
evaluated on development scenes — `studies.update_dev`'s, drawn from their own seed, `--per-split` per
family in distribution and with every factor out — never on a frozen suite. `--lp-runs` names a folder
whose `coda_seed<k>` runs already are the `lp` cells (the core table's: `lp` is CoDA's default), so those
are evaluated, not run again. Records land in `<results>/allocation_dev/` (default runs/results/findings;
the committed ones: `--results docs/results/findings`), and `allocation_dev.md` is rebuilt from them: each
score's success and its difference from `lp` paired by seed.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common.cli import comma_list, command_parser, seed_list
from common.markdown import md_table
from experiments.table.cells import cell_config, evaluate, run_cell, seed_cell, shared_bootstrap
from experiments.table.presets import TABLES
from experiments.table.record import ROOT, RUNS_RESULTS, metrics_rows, provenance, sha256
from experiments.table.stats import mean_se
from memory.ledger import SCORES
from studies.update_dev import SPLITS, dev_scenes

RESULTS = RUNS_RESULTS / "findings"  # the committed records: --results docs/results/findings
TABLE = "core"


def score_config(score: str, seed: int) -> Any:
    """The core table's CoDA cell of `seed`, its arms ranked by `score`."""
    cfg = cell_config(TABLES.get(TABLE), "coda", seed, "rules", 2)
    return dataclasses.replace(cfg, allocation=dataclasses.replace(cfg.allocation, score=score))


def run_dir(score: str, seed: int, out: Path, lp_runs: Path | None) -> Path:
    """Where the (score, seed) cell runs: the core table's finished CoDA cell for `lp` when given."""
    if score == "lp" and lp_runs is not None:
        run = lp_runs / f"coda_seed{seed}"
        if not run.is_dir():
            raise FileNotFoundError(f"--lp-runs {lp_runs}: no run coda_seed{seed} there")
        return run
    return out / f"{score.replace('+', '_')}_seed{seed}"


def one_cell(score: str, seed: int, *, out: Path, lp_runs: Path | None, boots: Path, kept: Path,
             scenes: Sequence[Any], pool: Any) -> dict[str, Any]:
    cfg, t0 = score_config(score, seed), time.perf_counter()
    run = run_dir(score, seed, out, lp_runs)
    if len(metrics_rows(run)) < cfg.rounds + 1:
        if run.parent == lp_runs:
            raise RuntimeError(f"{run} has not finished its {cfg.rounds} rounds: finish the table first")
        boot = shared_bootstrap(TABLES.get(TABLE), seed, "rules", 2, boots, kept)
        seed_cell(run, boot)
        run_cell(cfg, run)
    policy = run / "policy" / f"round_{cfg.rounds:02d}.safetensors"
    got = evaluate(policy, scenes, seed, pool, cfg.rollout_max_steps)
    return {"score": score, "seed": seed, "rounds": cfg.rounds, "run_dir": str(run), "policy": sha256(policy),
            **{split: {f: got[f][split] for f in cfg.families} for split in SPLITS},
            "wall_s": round(time.perf_counter() - t0, 1), "code_commit": provenance("")["commit"]}


def _avg(cell: dict[str, Any], split: str) -> float:
    return sum(cell[split].values()) / len(cell[split])


def markdown(cells: Sequence[dict[str, Any]], command: str) -> str:
    by = {s: {c["seed"]: c for c in cells if c["score"] == s} for s in SCORES}
    rows = []
    for s, cs in by.items():
        if not cs:
            continue
        shared = sorted(set(cs) & set(by["lp"]))
        diff = mean_se([_avg(cs[k], "ood") - _avg(by["lp"][k], "ood") for k in shared]) if s != "lp" else None
        show = [mean_se([_avg(c, split) for c in cs.values()]) for split in SPLITS]
        rows.append((f"`{s}`", *(f"{v['mean']:.1f} ± {v['se']:.1f}" for v in show),
                     "–" if diff is None else f"{diff['mean']:+.1f} ± {diff['se']:.1f} ({len(shared)} seeds)",
                     sorted(cs)))
    head = ("score", *(f"dev {s.upper()}" for s in SPLITS), "dev OOD − lp, paired", "seeds")
    return ("\n".join(md_table(head, rows)) + "\n\nDevelopment scenes only (`studies.update_dev`'s); success "
            f"in %, mean ± SE over seeds.\n\nCommand: `{command}`\n")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.allocation_dev", __doc__)
    ap.add_argument("--scores", type=comma_list(choices=SCORES), default=list(SCORES),
                    help=f"comma-separated, of {', '.join(SCORES)}")
    ap.add_argument("--seeds", type=seed_list, default=[0, 1, 2], help="N (seeds 0..N-1) or a list")
    ap.add_argument("--per-split", type=int, default=25, help="development scenes per family and split")
    ap.add_argument("--lp-runs", type=Path, help="a folder whose coda_seed<k> runs are the lp cells")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "allocation_dev", help="the cells' runs")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where allocation_dev/ and allocation_dev.md go (default runs/results/findings)")
    a = ap.parse_args(argv)
    if a.per_split < 1:
        print("error: --per-split must be at least 1", file=sys.stderr)
        return 2
    if a.lp_runs is not None and not a.lp_runs.is_dir():
        print(f"error: --lp-runs {a.lp_runs}: no such folder", file=sys.stderr)
        return 2
    from sim.pool import EpisodePool

    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m studies.allocation_dev " + " ".join(given)).strip()
    folder = a.results / "allocation_dev"
    folder.mkdir(parents=True, exist_ok=True)
    families = score_config("lp", 0).families
    with EpisodePool(2) as pool:
        scenes = dev_scenes(families, a.per_split, a.out / f"dev_scenes_n{a.per_split}", pool)
        for seed in a.seeds:
            for score in a.scores:
                rec = folder / f"{score.replace('+', '_')}_seed{seed}.json"
                if rec.exists():
                    continue
                res = one_cell(score, seed, out=a.out, lp_runs=a.lp_runs, boots=a.out / "bootstraps",
                               kept=ROOT / "docs" / "results", scenes=scenes, pool=pool)
                rec.write_text(json.dumps(res, indent=1) + "\n")
                print(f"{score} seed {seed}: dev OOD {_avg(res, 'ood'):.1f} %", flush=True)
                cells = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
                (a.results / "allocation_dev.md").write_text(markdown(cells, command))
    print((a.results / "allocation_dev.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
