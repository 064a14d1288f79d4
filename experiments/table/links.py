"""The ablations of the loop's own links (issue #39): CoDA with one link replaced at a time, inside the loop,
at the same generation budget, evaluated on the frozen suites like Table 1, each row's cost paired by seed.

    python -m experiments.table.links --preset smoke                      # the harness end to end
    python -m experiments.table.links --preset core --seeds 5 --commit    # the table (resumes; commits cells)

The rows (`agents.config.METHODS`, each `coda` with one `MethodConfig` link changed):

    coda_random_critic    the critic names a factor of the failing scene drawn at random
    coda_no_verify        every diagnosis is accepted without its targeted-vs-control batches
    coda_no_memory        no memory: each round's arms are the last round's validated diagnoses only
    coda_even_allocation  the budget split evenly over the arms instead of by learning progress
    coda_no_compose       no composite arm of the stored modes' edits

The `coda` row is the Table 1 preset's own cell (its record stays in that table's folder and is run there
when missing, as Table 1 would), and the rows start from that table's bootstraps, so every difference
CoDA − row is paired by seed: its mean, standard error and 95 % t interval (`table_power.paired`). A link
"costs ≥ 2 pp" when that interval lies above 2, is "measured not to" when it lies below, and is "not shown"
while it still holds 2.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from common.cli import command_parser
from common.markdown import md_table
from common.registry import Registry
from experiments.table.presets import TABLES, TablePreset
from experiments.table.record import ROOT, provenance
from experiments.table.stats import avg_ood, mean_se, ms
from experiments.table.table1 import cell_arguments, checked_cells, run_cells
from experiments.table.table1 import write_table as write_table1
from experiments.table.table_power import load_cells, paired

LINK_ROWS = {
    "coda_random_critic": "critic → a random factor of the failing scene",
    "coda_no_verify": "verification → accept every diagnosis",
    "coda_no_memory": "memory → none (the last round's diagnoses only)",
    "coda_even_allocation": "allocation → an even split over the arms",
    "coda_no_compose": "composition of modes → off",
}
BASE = "coda"
TARGET_PP = 2.0  # the bar: every distinctive link's removal costs at least this much average OOD

LINKS: Registry[TablePreset] = Registry("links preset")
LINKS.register("smoke", dataclasses.replace(TABLES.get("smoke"), table="links_smoke", label="table1_smoke"))
LINKS.register("core", dataclasses.replace(TABLES.get("core"), table="links_core", label="table1_core"))


MIN_SEEDS = 3  # the table's design; two seeds' differences on 0.5 pp steps tie often and give SE 0


def verdict(d: dict[str, Any] | None, target: float = TARGET_PP) -> str:
    """What a row's paired cost shows about "costs ≥ `target` pp" (no verdict below `MIN_SEEDS` seeds)."""
    if d is None or len(d["seeds"]) < MIN_SEEDS:
        return f"fewer than {MIN_SEEDS} paired seeds"
    lo, hi = d["ci95"]
    if lo >= target:
        return f"costs ≥ {target:g} pp: shown"
    if hi < target:
        return f"measured not to cost {target:g} pp"
    return f"≥ {target:g} pp not shown (the interval holds it)"


def aggregate(results: Path, preset: TablePreset) -> dict[str, Any]:
    """`{"rows": {method: {"label", "avg_ood", "id", "cells", "cost"}}, "seeds"}`: the rows' success (mean ±
    SE over seeds) and each ablated row's cost against CoDA, paired by seed."""
    cells = load_cells(results / preset.table, *([results / preset.label] if preset.label else []))
    rows = {}
    for m in (BASE, *LINK_ROWS):
        cs = list(cells.get(m, {}).values())
        if not cs:
            continue
        id_avg = [sum(c["id"].values()) / len(c["id"]) for c in cs]
        cost = None if m == BASE else paired(cells, m, base=BASE, margin=TARGET_PP,
                                             per_split=preset.per_split or 10)
        rows[m] = {"label": LINK_ROWS.get(m, "CoDA (every link)"),
                   "avg_ood": mean_se([avg_ood(c) for c in cs]), "id": mean_se(id_avg), "cells": len(cs),
                   "seeds": sorted(c["seed"] for c in cs), "cost": cost,
                   "verdict": None if m == BASE else verdict(cost)}
    return {"rows": rows, "target_pp": TARGET_PP}


def markdown(table: dict[str, Any], meta: dict[str, Any], preset_name: str) -> str:
    def cost(r: dict[str, Any]) -> str:
        c = r["cost"]
        if c is None:
            return "–"
        return f"{c['mean']:+.1f} ± {c['se']:.1f} [{c['ci95'][0]:+.1f}, {c['ci95'][1]:+.1f}]"

    head = ("link removed", "method", "avg OOD", "ID", "cost: CoDA − row (pp, ± SE [95 % t])", "verdict",
            "seeds")
    rows = [(r["label"], f"`{m}`", ms(r["avg_ood"]), ms(r["id"]), cost(r), r["verdict"] or "–", r["seeds"])
            for m, r in table["rows"].items()]
    notes = [f"Preset `{preset_name}`; success in %, mean ± standard error over seeds; each cost paired by "
             f"seed against the `{BASE}` cell of the same seed (same bootstrap, same frozen suites). The "
             f"bar: every link's removal costs ≥ {table['target_pp']:g} pp average OOD.",
             f"Command: `{meta['command']}` · cells computed at commit(s) "
             f"{', '.join(meta['cell_commits'])} · table written at {meta['commit']} · {meta['versions']}"]
    return "\n".join(md_table(head, rows)) + "\n\n" + "\n\n".join(notes) + "\n"


def write_table(results: Path, preset: TablePreset, preset_name: str, command: str) -> dict[str, Any]:
    table = aggregate(results, preset)
    meta = provenance(command)
    folders = [results / preset.table, *([results / preset.label] if preset.label else [])]
    cells = [json.loads(p.read_text()) for f in folders for p in sorted(f.glob("*_seed*.json"))]
    meta["cell_commits"] = sorted({c.get("code_commit", "unrecorded") for c in cells
                                   if c["method"] in (BASE, *LINK_ROWS)})
    table["provenance"] = meta
    (results / f"{preset.table}.json").write_text(json.dumps(table, indent=1) + "\n")
    (results / f"{preset.table}.md").write_text(markdown(table, meta, preset_name))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.links", __doc__)
    ap.add_argument("--preset", default="core", help=f"one of {', '.join(LINKS.names())}")
    ap.add_argument("--methods", default=",".join((BASE, *LINK_ROWS)), help="comma-separated rows (methods)")
    ap.add_argument("--out", type=Path, help="the cells' run directories (default: the shared table's, "
                                             "runs/<its table>, whose coda cells and bootstraps it shares)")
    cell_arguments(ap)
    a = ap.parse_args(argv)
    try:
        preset, methods = checked_cells(LINKS, a)
        unknown = [m for m in methods if m not in (BASE, *LINK_ROWS)]
        if unknown:
            rows = ", ".join((BASE, *LINK_ROWS))
            raise ValueError(f"{', '.join(unknown)}: not a row of this table ({rows})")
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    seeds = a.seeds if a.seeds is not None else list(range(preset.seeds))
    shared = next(n for n in TABLES.names() if TABLES.get(n).table == preset.label)
    out = a.out or ROOT / "runs" / preset.label
    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m experiments.table.links " + " ".join(given)).strip()

    def write() -> dict[str, Any]:
        return write_table(a.results, preset, a.preset, command)

    if BASE in methods:  # CoDA's own cells, recorded (and their table rebuilt) where that table keeps them
        def write_both() -> dict[str, Any]:
            write_table1(a.results, TABLES.get(shared), shared, command)
            return write()

        run_cells(TABLES.get(shared), shared, [BASE], seeds, critic="rules", workers=a.workers, out=out,
                  results=a.results, commit=a.commit, write=write_both, executor=a.executor,
                  ray_address=a.ray_address)
    rest = [m for m in methods if m != BASE]
    if rest:
        run_cells(preset, a.preset, rest, seeds, critic="rules", workers=a.workers, out=out,
                  results=a.results, commit=a.commit, write=write, executor=a.executor,
                  ray_address=a.ray_address)
    write()
    print((a.results / f"{preset.table}.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
