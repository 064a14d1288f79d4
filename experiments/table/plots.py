"""Plots of Table 1 from its cell records (matplotlib, PNG), and the table's self-contained HTML report
with the table and the plots embedded.

    python -m experiments.table.plots [--table table1] [--results docs/results]   # default runs/results

- `<table>_ood_vs_envs.png`: frozen-suite success on the curve split (OOD) against accepted training
  environments per family, one line per method (mean over seeds; the x axis counts the scenes each method
  was given, equal for all by construction).
- `<table>_gain.png`: OOD gain over the round-0 policy per round, averaged over families: CoDA against
  scalar-feedback co-evolution.
- `<table>_memory.png`: CoDA's memory per round: difficulty modes in memory, validated diagnoses that
  round, cross-family reuses (cumulative), mean over seeds.
"""

from __future__ import annotations

import base64
import html
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser
from experiments.table.record import RUNS_RESULTS


def load_cells(results: Path, table: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((results / table).glob("*_seed*.json"))]


def _by_method(cells: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        out[c["method"]].append(c)
    return out


def _save(fig: Any, out: Path, ax: Any = None, ylabel: str = "", legend: int = 7) -> Path:
    """Label a per-round plot's axes (when `ax` is given), then write the PNG and free the figure."""
    import matplotlib.pyplot as plt

    if ax is not None:
        ax.set_xlabel("round")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=legend)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _curve(c: dict[str, Any], family: str, split: str = "ood") -> tuple[list[int], list[float]]:
    """(accepted environments so far, success) per round of one cell on one family."""
    rounds = sorted(c["curve"])
    acc = [0]
    for r in rounds[1:]:
        acc.append(acc[-1] + c["accepted_per_round"].get(str(int(r[-2:])), {}).get(family, 0))
    ys = [c["curve"][r][family][split] for r in rounds]
    return acc, ys


def plot_ood_vs_envs(cells: Sequence[dict[str, Any]], out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    if not cells:
        return None
    fams = cells[0]["families"]
    fig, axes = plt.subplots(1, len(fams), figsize=(3.2 * len(fams), 3.0), squeeze=False, sharey=True)
    for ax, fam in zip(axes[0], fams, strict=True):
        for m, cs in _by_method(cells).items():
            curves = [_curve(c, fam) for c in cs]
            n = min(len(x) for x, _ in curves)
            xs = np.mean([x[:n] for x, _ in curves], axis=0)
            ys = np.mean([y[:n] for _, y in curves], axis=0)
            ax.plot(xs, ys, marker="o", label=m, lw=2.2 if m == "coda" else 1.2)
        ax.set_title(fam, fontsize=10)
        ax.set_xlabel("accepted training environments")
    axes[0][0].set_ylabel("OOD success (%)")
    axes[0][-1].legend(fontsize=7, loc="best")
    return _save(fig, out)


def _avg_gain(c: dict[str, Any]) -> list[float]:
    rounds = sorted(c["curve"])
    per_round = [np.mean([c["curve"][r][f]["ood"] for f in c["families"]]) for r in rounds]
    return [float(v - per_round[0]) for v in per_round]


def plot_gain(cells: Sequence[dict[str, Any]], out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    by = _by_method(cells)
    have = [m for m in ("coda", "scalar") if m in by]
    if not have:
        return None
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for m in have:
        gains = [_avg_gain(c) for c in by[m]]
        n = min(len(g) for g in gains)
        g = np.array([x[:n] for x in gains])
        se = g.std(0) / max(len(g) ** 0.5, 1)
        ax.errorbar(range(n), g.mean(0), yerr=se, marker="o", capsize=3, label=m)
    ax.axhline(0, color="grey", lw=0.8)
    return _save(fig, out, ax, "OOD gain over round 0 (pp)", legend=8)


def plot_memory(cells: Sequence[dict[str, Any]], out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    cs = [c for c in cells if c["method"] == "coda" and c.get("memory_per_round")]
    if not cs:
        return None
    rounds = sorted({int(r) for c in cs for r in c["memory_per_round"]})

    def series(key: str) -> list[float]:
        return [float(np.mean([c["memory_per_round"].get(str(r), {}).get(key, 0) for c in cs]))
                for r in rounds]

    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    w = 0.27
    x = np.arange(len(rounds))
    ax.bar(x - w, series("modes"), w, label="modes in memory")
    ax.bar(x, series("validated"), w, label="validated this round")
    ax.bar(x + w, series("cross_family_reuse"), w, label="cross-family reuses")
    ax.set_xticks(x, [str(r) for r in rounds])
    return _save(fig, out, ax, "count (mean over seeds)", legend=7)


def make_plots(results: Path, table: str) -> list[Path]:
    """Every plot of `table` that its cells support; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    cells = load_cells(results, table)
    made = [plot_ood_vs_envs(cells, results / f"{table}_ood_vs_envs.png"),
            plot_gain(cells, results / f"{table}_gain.png"),
            plot_memory(cells, results / f"{table}_memory.png")]
    return [p for p in made if p is not None]


def write_html(results: Path, table: str, plots: Sequence[Path]) -> Path:
    """One self-contained page: the table (from `<table>.md`) and the plots, embedded."""
    md = (results / f"{table}.md").read_text() if (results / f"{table}.md").exists() else ""
    rows = [ln for ln in md.splitlines() if ln.startswith("|")]
    notes = [ln for ln in md.splitlines() if ln and not ln.startswith("|")]
    cells = [[html.escape(x.strip()) for x in r.strip("|").split("|")] for r in rows
             if not r.startswith("|---")]
    thead = "".join(f"<th>{x}</th>" for x in cells[0]) if cells else ""
    tbody = "".join("<tr>" + "".join(f"<td>{x}</td>" for x in r) + "</tr>" for r in cells[1:])
    imgs = "".join(f'<figure><img alt="{p.stem}" src="data:image/png;base64,'
                   f'{base64.b64encode(p.read_bytes()).decode()}"><figcaption>{p.stem}</figcaption></figure>'
                   for p in plots)
    page = (f"<!doctype html><meta charset=utf-8><title>{table}</title><style>body{{font-family:sans-serif;"
            f"margin:2em}}td,th{{border:1px solid #ccc;padding:4px 8px}}table{{border-collapse:collapse}}"
            f"img{{max-width:100%}}</style><h1>{table}</h1><table><thead><tr>{thead}</tr></thead>"
            f"<tbody>{tbody}</tbody></table>" + "".join(f"<p>{html.escape(n)}</p>" for n in notes) + imgs)
    out = results / f"{table}.html"
    out.write_text(page)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.plots", __doc__)
    ap.add_argument("--table", default="table1")
    ap.add_argument("--results", type=Path, default=RUNS_RESULTS,
                    help="the folder that holds the table's records; the plots and page are written there "
                         "(default runs/results)")
    a = ap.parse_args(argv)
    plots = make_plots(a.results, a.table)
    print("\n".join(map(str, [*plots, write_html(a.results, a.table, plots)])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
