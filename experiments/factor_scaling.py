"""Does co-evolution pay more as the generation space grows? Issue #39's scaling study.

    python -m experiments.factor_scaling --results docs/results      # the table and plot from the records
    python -m experiments.factor_scaling --run --seeds 0,1,2,3,4 --results docs/results --commit

CoDA, uniform, learnability, domain randomization and SFT at the same budget in each space: the `core`
table (the families' own factors) and the `extended` table (those and `sim.extension`'s, about three
times as many; its seed distribution is the core scene), each a preset of `python -m experiments.table`
with its own frozen suites (`frozen50`, `extended50b`). `--run` runs the cells both tables still miss
(resumable; with `--commit` each is committed as it lands); without it the table is rebuilt from the records
already there. For each space and each of two out-of-distribution splits — `ood` (every factor moved; in
the extended space nuisance ones too, where the bootstrap policy is at the floor) and `ood_single` (one
factor moved, cycling over the space's factors: the bootstrap shrugs some off and fails on others) — each
method's average success over families, and CoDA − uniform and CoDA − learnability paired by seed (mean ±
SE, 95 % t interval): the curve of CoDA − uniform against the size of the space (`factor_scaling.md`,
`factor_scaling.png`). Beside them, where its records exist, the oracle of `studies.ceiling --table
<space>` on the same split (fine-tuned at the same budget on scenes drawn as that split draws them: what
a generator that knew the test distribution would reach) and the share of its gain over the bootstrap
that CoDA captures, over the seeds both have.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from common.cli import command_parser, seed_list, worker_count
from common.markdown import md_table
from experiments.table.presets import TABLES
from experiments.table.record import ROOT, oracle_folder, oracle_name, provenance, results_dir
from experiments.table.stats import avg_ood, mean_se, ms
from experiments.table.table_power import load_cells, paired

SPACES = ("core", "extended")  # each the name of its table preset, whose `space` override it is
SPLITS = ("ood", "ood_single")  # the out-of-distribution splits each space is read on
METHODS = ("coda", "uniform", "learnability", "domain_randomization", "sft")
CONTRASTS = ("uniform", "learnability")  # CoDA minus each, paired by seed
ORACLE = "oracle"  # `studies.ceiling` on the split's own distribution, at the table's budget


def factors_per_family(space: str) -> float:
    """Mean number of factors over the table's families in `space`."""
    from experiments.table.cells import cell_config
    from sim.families import get_family

    families = cell_config(TABLES.get(space), "coda", 0, "rules", 1).families
    return sum(len(get_family(f).schema(space)) for f in families) / len(families)


def on_split(cells: dict[str, dict[int, dict[str, Any]]], split: str) -> dict[str, dict[int, dict[str, Any]]]:
    """The cells read on `split`: each record's per-family `split` success in place of its `ood` (what
    `avg_ood` and `table_power.paired` read)."""
    return {m: {s: {**c, "ood": c[split]} for s, c in by_seed.items() if split in c}
            for m, by_seed in cells.items()}


def aggregate(results: Path) -> dict[str, Any]:
    """`{"spaces": {space: {"factors", "suite", "splits": {split: {"methods": {m: average success mean ±
    SE, seeds}, "coda_minus": {contrast: paired}}}}}}` from the records of each space's table."""
    out = {}
    for space in SPACES:
        preset = TABLES.get(space)
        folder = results / preset.table
        cells = load_cells(folder) if folder.is_dir() else {}
        splits = {}
        for split in SPLITS:
            read = on_split(cells, split)
            splits[split] = {
                "methods": {m: {"mean_se": mean_se([avg_ood(c) for c in read[m].values()]),
                                "seeds": sorted(read[m])} for m in METHODS if read.get(m)},
                "coda_minus": {m: paired(read, m, base="coda", per_split=preset.per_split or 10)
                               for m in CONTRASTS}}
            oracle = oracle_cells(results, space, split)
            if oracle:
                splits[split]["methods"][ORACLE] = {"mean_se": mean_se([avg_ood(c) for c in oracle.values()]),
                                                    "seeds": sorted(oracle)}
                splits[split]["capture"] = capture(read.get("coda", {}), oracle, boots(folder, split))
        out[space] = {"factors": round(factors_per_family(space), 1), "suite": preset.suite,
                      "table": preset.table, "splits": splits, "by_kind": by_kind(results, space)}
    return {"spaces": out}


def oracle_cells(results: Path, space: str, split: str) -> dict[int, dict[str, Any]]:
    """The oracle's records for `split` in `space` (`studies.ceiling --table <space> --sources <split>
    --budgets <the table's> --replay yes`, under `<results>/findings/ceiling_<space>/`) by seed, read on
    `split` as `on_split` reads a cell."""
    budget = TABLES.get(space).overrides["budget"]
    out = {}
    for path in sorted((results / "findings" / oracle_folder(space)).glob("*.json")):
        rec = json.loads(path.read_text())
        if path.stem == oracle_name(split, budget, True, rec["seed"]):
            out[rec["seed"]] = {**rec, "ood": rec[split]}
    return out


def boots(folder: Path, split: str | None = None) -> dict[int, dict[str, Any]]:
    """The table's bootstrap records by seed (read on `split` when given)."""
    out = {}
    for path in sorted((folder / "bootstrap").glob("seed*.json")):
        rec = json.loads(path.read_text())
        out[rec["seed"]] = {**rec, "ood": rec[split]} if split else rec
    return out


def capture(coda: dict[int, dict[str, Any]], oracle: dict[int, dict[str, Any]],
            boot: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """CoDA's gain over the bootstrap as a share of the oracle's, over the seeds all three have: mean gain
    over mean gain (a ratio of per-seed ratios would divide by one seed's noise); None without a common
    seed or without an oracle gain."""
    seeds = sorted(set(coda) & set(oracle) & set(boot))
    if not seeds:
        return None
    g_coda = mean_se([avg_ood(coda[k]) - avg_ood(boot[k]) for k in seeds])
    g_oracle = mean_se([avg_ood(oracle[k]) - avg_ood(boot[k]) for k in seeds])
    share = g_coda["mean"] / g_oracle["mean"] if g_oracle["mean"] > 0 else None
    return {"seeds": seeds, "coda_gain": g_coda, "oracle_gain": g_oracle, "share": share}


def moved_kind(scene: Any, space: str) -> str:
    """What an `ood_single` scene moved: the extension kind of its one factor outside the ID range
    (placement folded into what it places: `distractor_pos` → `distractor`; a count apart, `distractor
    count`), or "core" for a family's own."""
    from sim.extension import ADDED_COUNTS, EXTENSION_NAMES, kind_group
    from sim.families import get_family

    fam = get_family(scene.family)
    flat = fam.flat(scene.factors)
    moved = [f for f in fam.schema(space) if not f.contains(flat[f.name])]
    if len(moved) != 1:
        raise ValueError(f"an ood_single scene moves one factor; this one moves {[f.name for f in moved]}")
    f = moved[0]
    if f.name not in EXTENSION_NAMES:
        return "core"
    kind = kind_group(str(f.kind))
    # a count adds the objects; the others shape or place them (and move nothing while the count is 0)
    return f"{kind} count" if f.name in ADDED_COUNTS else kind


def by_kind(results: Path, space: str) -> dict[str, Any]:
    """`ood_single` success by the kind of factor each scene moved, per method (every seed's episodes
    pooled) and for the seeds' bootstraps: `{"kinds": {kind: scenes}, "rows": {method: {kind: [successes,
    episodes]}}}`, from the records that carry their episodes' outcomes (`cells.scene_outcomes`)."""
    from experiments.table import suites as frozen
    from experiments.table.cells import scene_outcomes

    preset = TABLES.get(space)
    folder = results / preset.table
    if not folder.is_dir():
        return {"kinds": {}, "rows": {}}
    records = {m: list(c.values()) for m, c in load_cells(folder).items()}
    seeds = {r["seed"] for recs in records.values() for r in recs}
    records["bootstrap"] = [r for k, r in boots(folder).items() if k in seeds]  # the methods' own starts
    records[ORACLE] = list(oracle_cells(results, space, "ood_single").values())
    kinds: dict[str, str] = {}
    rows: dict[str, dict[str, list[int]]] = {}
    for method, recs in records.items():
        for rec in recs:
            for path, ok in scene_outcomes(rec, "ood_single").items():
                if path not in kinds:
                    kinds[path] = moved_kind(frozen.SuiteScene(path, "", "", preset.suite).load(), space)
                tally = rows.setdefault(method, {}).setdefault(kinds[path], [0, 0])
                tally[0] += int(ok)
                tally[1] += 1
    return {"kinds": dict(sorted(Counter(kinds.values()).items())), "rows": rows}


def kind_markdown(space: str, table: dict[str, Any]) -> str:
    """The by-kind table of one space (empty when no record carries outcomes)."""
    order = [m for m in ("bootstrap", *METHODS, ORACLE) if m in table["rows"]]
    if not order:
        return ""
    body = []
    for kind, n in table["kinds"].items():
        cells = []
        for m in order:
            s, e = table["rows"][m].get(kind, (0, 0))
            cells.append(f"{100 * s / e:.0f} ({e})" if e else "–")
        body.append((f"`{kind}`", n, *cells))
    head = ("factor moved", "suite scenes", *(f"{m}: success % (episodes)" for m in order))
    return (f"**`{space}`: `ood_single` by the kind of factor each scene moves** (every seed's episodes "
            "pooled; the bootstrap row: those seeds' starting policies)\n\n"
            + "\n".join(md_table(head, body)))


def markdown(table: dict[str, Any], meta: dict[str, Any]) -> str:
    def diff(d: dict[str, Any] | None) -> str:
        if d is None:
            return "–"
        ci = f"[{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}]"
        return f"{d['mean']:+.1f} ± {d['se']:.1f} {ci} ({len(d['seeds'])})"

    head = ("space", "factors per family", "suite", "split", *METHODS, ORACLE,
            *(f"CoDA − {m} (seeds)" for m in CONTRASTS), "CoDA's share of the oracle's gain")
    rows = []
    for space, s in table["spaces"].items():
        for split, t in s["splits"].items():
            rows.append((f"`{space}`", s["factors"], f"`{s['suite']}`", f"`{split}`",
                         *(ms(t["methods"][m]["mean_se"]) if m in t["methods"] else "–"
                           for m in (*METHODS, ORACLE)),
                         *(diff(t["coda_minus"][m]) for m in CONTRASTS), share(t.get("capture"))))
    notes = ["Success on each space's own frozen suite, averaged over families (%, mean ± SE over seeds): "
             "`ood` moves every factor (in the extended space nuisance ones too), `ood_single` one, cycling "
             "over the space's movable factors. CoDA − method paired by seed (mean ± SE, 95 % t interval, "
             "number of seeds). The issue's targets: on the extended space CoDA − uniform ≥ +10 pp, and the "
             "gap growing with the size of the space.",
             "Oracle: `studies.ceiling --table <space> --sources <split> --budgets 6 --replay yes` — the "
             "seed's bootstrap fine-tuned as `sft` is, at the table's budget, on scenes drawn as the split "
             "draws them (other seeds); its records are under `findings/ceiling_<space>/`. CoDA's share: "
             "its mean gain over the bootstrap divided by the oracle's, over the seeds both have (the "
             "issue's target: ≥ 60 %).",
             f"Command: `{meta['command']}` · written at {meta['commit']} · {meta['versions']}"]
    kinds = [kind_markdown(space, s["by_kind"]) for space, s in table["spaces"].items() if s.get("by_kind")]
    return "\n".join(md_table(head, rows)) + "\n\n![factor_scaling](factor_scaling.png)\n\n" + \
        "".join(k + "\n\n" for k in kinds if k) + "\n\n".join(notes) + "\n"


def share(c: dict[str, Any] | None) -> str:
    """CoDA's share of the oracle's gain, with both gains (pp) and the seeds."""
    if c is None:
        return "–"
    gains = f"{c['coda_gain']['mean']:+.1f} of {c['oracle_gain']['mean']:+.1f} pp, {len(c['seeds'])} seeds"
    if c["share"] is None:
        return f"– (the oracle gains nothing: {gains})"
    return f"{100 * c['share']:.0f} % ({gains})"


def plot(table: dict[str, Any], path: Path) -> None:
    """CoDA − uniform (and − learnability) against factors per family, with 95 % intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SPLITS), figsize=(8, 3.4), sharey=True)
    for ax, split in zip(axes, SPLITS, strict=True):
        for k, m in enumerate(CONTRASTS):
            pts = [(s["factors"], s["splits"][split]["coda_minus"][m]) for s in table["spaces"].values()
                   if s["splits"][split]["coda_minus"][m]]
            if not pts:
                continue
            xs = [x + 0.4 * k for x, _ in pts]
            ys = [d["mean"] for _, d in pts]
            err = [[d["mean"] - d["ci95"][0] for _, d in pts], [d["ci95"][1] - d["mean"] for _, d in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=f"CoDA − {m}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"`{split}`", fontsize=9)
        ax.set_xlabel("factors per family")
    axes[0].set_ylabel("success, pp (paired)")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results: Path, command: str) -> dict[str, Any]:
    table = aggregate(results)
    meta = provenance(command)
    table["provenance"] = meta
    (results / "factor_scaling.json").write_text(json.dumps(table, indent=1) + "\n")
    plot(table, results / "factor_scaling.png")
    (results / "factor_scaling.md").write_text(markdown(table, meta))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.factor_scaling", __doc__)
    ap.add_argument("--run", action="store_true", help="run the cells the two tables still miss (resumes)")
    ap.add_argument("--seeds", type=seed_list, default=[0, 1, 2, 3, 4], help="N (seeds 0..N-1) or a list")
    ap.add_argument("--workers", type=worker_count, default=2, help="episode-pool workers per cell")
    ap.add_argument("--results", type=Path, help="where the tables' records are (default runs/results)")
    ap.add_argument("--commit", action="store_true", help="git-commit each finished cell (needs --results)")
    a = ap.parse_args(argv)
    try:
        results = results_dir(a.results, a.commit)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m experiments.factor_scaling " + " ".join(given)).strip()
    if a.run:
        from experiments.table.table1 import run_table

        for space in SPACES:
            run_table(space, METHODS, a.seeds, critic="rules", workers=a.workers,
                      out=ROOT / "runs" / TABLES.get(space).table, results=results, commit=a.commit,
                      command=command)
    write(results, command)
    print((results / "factor_scaling.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
