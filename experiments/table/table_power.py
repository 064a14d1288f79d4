"""How large a difference Table 1 can resolve: each method against CoDA (or `--base`), paired by seed.

    python -m experiments.table.table_power [--margin 5] [--out docs/results/table1_power.md]
    python -m experiments.table.table_power --base coda_no_seed_arm     # a variant against every other row

The cells of one seed share the bootstrap policy and the frozen suites, so the per-seed difference
CoDA − method removes the bootstrap's share of the variance. For each method: the mean paired difference in
average OOD success, its standard error over seeds, a 95 % t interval, and how many seeds a study would need
to detect a true difference of `--margin` pp with 80 % power at the observed spread (two-sided α = 0.05,
normal approximation: n = ((1.96 + 0.84) · sd / margin)²). The binomial floor says how much of that spread
one cell's finite suite explains on its own: an average over 4 families of `per_split` scenes each at the
method's success rate p has SE √(p(1−p) / (4 · per_split)).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from common.cli import command_parser
from common.markdown import md_table
from experiments.table.stats import TABLE_METHODS, avg_ood

T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}  # t_{0.975, df}


def load_cells(*folders: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """Cell records by method and seed from one table's folder, or several tables that share their cells'
    bootstraps (Table 1 and its ablations); a method recorded in two folders, or two cells of one seed
    that share a bootstrap but started from different bootstrap policies, is an error (they are not pairs)."""
    cells: dict[str, dict[int, dict[str, Any]]] = {}
    boots: dict[int, tuple[str, Path]] = {}
    for folder in folders:
        for path in sorted(folder.glob("*_seed*.json")):
            cell = json.loads(path.read_text())
            seed = int(cell["seed"])
            if seed in cells.get(cell["method"], {}):
                raise ValueError(f"{cell['method']} seed {seed} is recorded twice (again in {path})")
            boot = cell.get("bootstrap_sha256") if cell.get("bootstrap_shared") else None
            if boot is not None:
                have, where = boots.setdefault(seed, (boot, path))
                if have != boot:
                    raise ValueError(f"{path} and {where} start seed {seed} from different bootstrap "
                                     "policies: their cells are not paired")
            cells.setdefault(cell["method"], {})[seed] = cell
    return cells


def at_round(cell: dict[str, Any], round_no: int | None) -> float:
    """A cell's average OOD success after its final round, or (`round_no`) after that round of its curve."""
    if round_no is None:
        return avg_ood(cell)
    point = cell["curve"][f"round_{round_no:02d}"]
    return sum(v["ood"] for v in point.values()) / len(point)


def paired(cells: dict[str, dict[int, dict[str, Any]]], method: str, base: str = "coda",
           margin: float = 5.0, per_split: int = 10, round_no: int | None = None) -> dict[str, Any] | None:
    seeds = sorted(set(cells.get(method, {})) & set(cells.get(base, {})))
    if len(seeds) < 2:
        return None
    d = [at_round(cells[base][s], round_no) - at_round(cells[method][s], round_no) for s in seeds]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    t = T975.get(n - 1, 1.96)
    p = sum(at_round(cells[method][s], round_no) for s in seeds) / n / 100
    return {"method": method, "seeds": seeds, "diffs": [round(x, 2) for x in d], "mean": round(mean, 2),
            "se": round(se, 2), "ci95": [round(mean - t * se, 1), round(mean + t * se, 1)],
            "seeds_for_margin": math.ceil(((1.96 + 0.84) * sd / margin) ** 2) if sd > 0 else n,
            "binomial_se": round(100 * math.sqrt(p * (1 - p) / (4 * per_split)), 2)}


def markdown(rows: list[dict[str, Any]], margin: float, cmd: str, base: str = "coda") -> str:
    name = "CoDA" if base == "coda" else f"`{base}`"
    header = (f"{name} − method", "per-seed differences (pp)", "mean ± SE", "95 % t interval",
              f"seeds to detect {margin:g} pp (80 % power)", "binomial SE of one cell's avg OOD")
    out = md_table(header, [
        (r["method"], ", ".join(f"{x:+.1f}" for x in r["diffs"]), f"{r['mean']:+.1f} ± {r['se']:.1f}",
         f"[{r['ci95'][0]:+.1f}, {r['ci95'][1]:+.1f}]", r["seeds_for_margin"], f"{r['binomial_se']:.1f}")
        for r in rows])
    return "\n".join(out) + f"\n\nAverage OOD success, paired by seed. Command: `{cmd}`\n"


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.table_power", __doc__)
    ap.add_argument("--cells", default="docs/results/table1",
                    help="the table's cell folder, or comma-separated folders of tables that share "
                         "bootstraps (docs/results/table1,docs/results/ablations)")
    ap.add_argument("--margin", type=float, default=5.0, help="the difference to detect, pp")
    ap.add_argument("--per-split", type=int, default=10, help="scenes per family in each frozen split")
    ap.add_argument("--base", default="coda", help="the row every other row is paired against")
    ap.add_argument("--round", type=int, dest="round_no",
                    help="pair the cells' success after this round of their curves (default: the final)")
    ap.add_argument("--out", type=Path, help="write the Markdown table here")
    a = ap.parse_args(argv)
    try:
        cells = load_cells(*(Path(f) for f in a.cells.split(",")))
    except ValueError as e:
        ap.error(str(e))
    if a.base not in cells:
        ap.error(f"no {a.base} cells under {a.cells}")
    if a.round_no is not None:
        short = sorted({f"{m} seed {s}" for m, by in cells.items() for s, c in by.items()
                        if f"round_{a.round_no:02d}" not in c.get("curve", {})})
        if short:
            ap.error(f"--round {a.round_no}: no such round in the curve of {', '.join(short[:4])}"
                     + (f" (and {len(short) - 4} more)" if len(short) > 4 else ""))
    others = [m for m in TABLE_METHODS if m in cells] + sorted(set(cells) - set(TABLE_METHODS))
    rows = [r for m in others if m != a.base
            if (r := paired(cells, m, base=a.base, margin=a.margin, per_split=a.per_split,
                            round_no=a.round_no)) is not None]
    cmd = ("python -m experiments.table.table_power"
           + (f" --cells {a.cells}" if a.cells != ap.get_default("cells") else "")
           + (f" --margin {a.margin:g}" if a.margin != ap.get_default("margin") else "")
           + (f" --per-split {a.per_split}" if a.per_split != ap.get_default("per_split") else "")
           + (f" --base {a.base}" if a.base != "coda" else "")
           + (f" --round {a.round_no}" if a.round_no is not None else "")
           + (f" --out {a.out}" if a.out else ""))
    text = markdown(rows, a.margin, cmd, a.base)
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
