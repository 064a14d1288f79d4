"""Answers FINDINGS #26. What each cell trained on: how far out of distribution its training scenes were, and
how many distinct out-of-distribution conditions they covered — read from the cells' run directories, set
beside the cells' frozen-suite results.

    python -m studies.scene_coverage --runs runs/table1_default \
        --out docs/results/findings/scene_coverage.json

For every cell (a run directory with a record `<method>_seed<k>.json` in a `--records` folder) and every
round after the bootstrap, the scenes of the expert demonstrations its updates trained on (the run's
final `demo_history`) are read from `scenes/round_NN/`. For each scene and each factor that has an
out-of-distribution part (`FactorDef.has_ood`): is its value outside the family's in-distribution range
(an unseen choice), and on which side. Per cell:

- `ood_factors`: mean number of such factors out of distribution per training scene;
- `conditions`: distinct (factor, side) pairs out of distribution, per family, mean over families;
- `all_out`: the share of the family's OOD-capable factors that training scenes moved out at least once;
- `depth`: how far out the OOD number factors lie, 0 at the ID bound and 1 at the OOD bound, mean.

Then, over every cell, the rank correlation of each with the cell's average OOD success on the frozen suites.
It reads finished cells only; it runs no episode, so it never touches the suites' scenes.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ",".join(str(ROOT / "docs" / "results" / t) for t in ("table1", "ablations"))  # Table 1's cells


def ood_side(f: Any, value: Any) -> str | None:
    """Where `value` of factor `f` lies out of distribution: "low"/"high" below/above its ID range, the
    value itself for an unseen choice; None in distribution (or for a factor with no OOD part)."""
    if not f.has_ood or f.contains(value):
        return None
    return str(value) if f.type == "choice" else "low" if float(value) < f.range[0] else "high"


def depth(f: Any, value: Any) -> float | None:
    """How far out a number factor's out-of-distribution value lies: 0 at its ID bound, 1 at its OOD bound
    on that side; None in distribution, for a choice, or on a side with no OOD part."""
    if f.type == "choice" or ood_side(f, value) is None:
        return None
    (lo, hi), (olo, ohi), v = f.range, f.ood_range or f.range, float(value)
    if v < lo:
        return (lo - v) / (lo - olo) if olo < lo else None
    return (v - hi) / (ohi - hi) if ohi > hi else None


def scene_conditions(scene: dict[str, Any]) -> tuple[str, list[tuple[str, str]], int, list[float]]:
    """(family, its OOD (factor, side) pairs, how many of its factors can be OOD, the depth of each OOD
    number factor) of one scene file."""
    from sim.families import get_family

    fam = get_family(scene["family"])
    values = {name: v for group in scene["factors"].values() for name, v in group.items()}
    capable = [f for f in fam.factors if f.has_ood and f.name in values]
    out = [(f.name, side) for f in capable if (side := ood_side(f, values[f.name])) is not None]
    depths = [d for f in capable if (d := depth(f, values[f.name])) is not None]
    return scene["family"], out, len(capable), depths


def training_scenes(run: Path) -> list[dict[str, Any]]:
    """The scenes of the expert demonstrations the cell's updates trained on after the bootstrap: its final
    state's `demo_history` (every round's accepted scenes) less round 0's seed demonstrations."""
    from agents.graph.build import thread_config
    from agents.graph.rundir import RunDir
    from agents.replay import open_app

    with open_app(RunDir(run)) as app:
        history = app.get_state(thread_config()).values.get("demo_history", {})
    demos = [Path(d) for ds in history.values() for d in ds if "round_00" not in Path(d).parts]
    scenes = []
    for d in demos:
        rnd, scene_id = d.parent.name, json.loads((run / d.with_suffix(".json")).read_text())["scene_id"]
        found = list((run / "scenes" / rnd).glob(f"*_{scene_id}.json"))
        if len(found) != 1:
            raise SystemExit(f"error: {run}: the scene {scene_id} of demonstration {d} is not one file under "
                             f"scenes/{rnd}/ ({len(found)} found)")
        scenes.append(json.loads(found[0].read_text()))
    return scenes


def cell_coverage(run: Path) -> dict[str, float]:
    per_family: dict[str, list[list[tuple[str, str]]]] = defaultdict(list)
    capable: dict[str, int] = {}
    depths: list[float] = []
    for scene in training_scenes(run):
        fam, out, n, ds = scene_conditions(scene)
        per_family[fam].append(out)
        capable[fam] = n
        depths += ds
    if not per_family:
        raise SystemExit(f"error: {run} has no training scenes after round 0")
    counts = [len(out) for outs in per_family.values() for out in outs]
    conds = [len({c for out in outs for c in out}) for outs in per_family.values()]
    moved = [len({f for out in outs for f, _ in out}) / capable[fam] for fam, outs in per_family.items()]
    return {"scenes": len(counts), "ood_factors": float(np.mean(counts)), "conditions": float(np.mean(conds)),
            "all_out": float(np.mean(moved)), "depth": float(np.mean(depths)) if depths else 0.0}


def record_of(run: Path, records: Sequence[Path]) -> dict[str, Any] | None:
    for d in records:
        p = d / f"{run.name}.json"
        if p.is_file():
            return json.loads(p.read_text())
    return None


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Rank correlation; NaN when either side is constant (it is then undefined)."""
    from scipy.stats import spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.scene_coverage", __doc__)
    ap.add_argument("--runs", type=Path, required=True, help="a table's run folder (cells as subfolders)")
    ap.add_argument("--records", default=RECORDS,
                    help="comma-separated folders of the cells' records (a table's docs/results/<table>)")
    ap.add_argument("--out", type=Path, help="write the cells and correlations here (JSON)")
    a = ap.parse_args(argv)
    from experiments.table.stats import avg_ood

    if not a.runs.is_dir():
        print(f"error: no folder {a.runs}", file=sys.stderr)
        return 2
    cells = []
    for run in sorted(p for p in a.runs.iterdir() if p.is_dir() and not p.name.startswith("_")):
        rec = record_of(run, [Path(f) for f in a.records.split(",")])
        if rec is None or not (run / "metrics.jsonl").is_file():
            continue
        method, seed = run.name.rsplit("_seed", 1)
        if method == "zero_shot":  # it trains on nothing
            continue
        cells.append({"method": method, "seed": int(seed), "avg_ood": avg_ood(rec), **cell_coverage(run)})
    if len(cells) < 3:
        print(f"error: {len(cells)} recorded cell(s) under {a.runs}; need at least 3", file=sys.stderr)
        return 2
    keys = ("ood_factors", "conditions", "all_out", "depth")
    corr = {k: spearman([c[k] for c in cells], [c["avg_ood"] for c in cells]) for k in keys}
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        by_method[c["method"]].append(c)
    print(f"{'method':22s} cells  avg OOD  OOD factors/scene  conditions/family  factors moved  depth")
    for m, cs in sorted(by_method.items(), key=lambda kv: -np.mean([c['avg_ood'] for c in kv[1]])):
        mean = {k: np.mean([c[k] for c in cs]) for k in ("avg_ood", *keys)}
        print(f"{m:22s} {len(cs):5d}  {mean['avg_ood']:7.1f}  {mean['ood_factors']:17.2f}  "
              f"{mean['conditions']:17.1f}  {mean['all_out']:13.2f}  {mean['depth']:5.2f}")
    print("Spearman ρ with the cell's avg OOD over " f"{len(cells)} cells: "
          + ", ".join(f"{k} {v:+.2f}" for k, v in corr.items()))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"runs": a.runs.name, "cells": cells, "spearman": corr}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
