"""Answers a choice of the loop's configuration honestly (issue #39): which value of one `RunConfig` knob,
for one method of the `core` table? A development measurement.

    python -m studies.knob_dev --method coda --knob allocation.score=lp,learnability,lp+learnability
    python -m studies.knob_dev --method uniform --knob variant_factors=3,14 --seeds 0,1,2
    python -m studies.knob_dev --method coda --knob allocation.score=lp,learnability --reuse runs/table1_core

Each (value, seed) is the `core` table's cell of `--method` at that seed (three rounds from the seed's kept
Table 1 bootstrap) with only the knob changed — a dotted path into `RunConfig` (`variant_factors`,
`allocation.score`, `verify.at_ceiling`), its values read as the field's type — run with `agents.run` like
a table cell (a killed study resumes: finished cells are skipped, an interrupted one continues). Its final
policy is evaluated on development scenes — `studies.update_dev`'s, drawn from their own seed,
`--per-split` per family in distribution and with every factor out — never on a frozen suite. The first
value is the reference: each other value's difference from it is paired by seed. `--reuse` names a folder
whose `<method>_seed<k>` runs already are the cells of the value the table runs with (the core table's
own runs), so those are evaluated, not run again. Records land in `<results>/knob_dev/<method>__<knob>/`
(default runs/results/findings; the committed ones: `--results docs/results/findings`) and `knob_dev.md`
is rebuilt from every record there.

    python -m studies.knob_dev --pair coda:background=dr,uniform:background=dr --results docs/results/findings

`--pair` runs nothing: it pairs recorded cells of different methods or knobs by seed (the first against
each of the others, dev OOD), into `knob_dev_pairs.md` beside the page (one section per `--pair`, replaced
when repeated).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common.cli import command_parser, seed_list
from common.markdown import md_table
from experiments.table.cells import cell_config, evaluate, run_cell, seed_cell, shared_bootstrap
from experiments.table.presets import TABLES
from experiments.table.record import ROOT, RUNS_RESULTS, metrics_rows, provenance, sha256
from experiments.table.stats import mean_se
from studies.update_dev import SPLITS, dev_scenes

RESULTS = RUNS_RESULTS / "findings"  # the committed records: --results docs/results/findings
TABLE = "core"


def with_knob(cfg: Any, knob: str, text: str) -> Any:
    """`cfg` with the dataclass field at dotted path `knob` set to `text` read as that field's type (bool,
    int, float or str); ValueError naming the path or the value when either does not fit."""
    head, _, rest = knob.partition(".")
    if not dataclasses.is_dataclass(cfg) or head not in {f.name for f in dataclasses.fields(cfg)}:
        raise ValueError(f"{knob!r}: no field {head!r} in {type(cfg).__name__}")
    now = getattr(cfg, head)
    if rest:
        return dataclasses.replace(cfg, **{head: with_knob(now, rest, text)})
    if isinstance(now, bool):
        if text not in ("true", "false"):
            raise ValueError(f"{knob}={text!r}: true or false")
        value: Any = text == "true"
    elif isinstance(now, int | float):
        try:
            value = type(now)(text)
        except ValueError:
            raise ValueError(f"{knob}={text!r}: not a {type(now).__name__}") from None
    elif isinstance(now, str):
        value = text
    else:
        raise ValueError(f"{knob}: a {type(now).__name__}, not a number, flag or word this study can set")
    return dataclasses.replace(cfg, **{head: value})  # the config's own checks refuse a bad value


def knob_config(method: str, knob: str, value: str, seed: int) -> Any:
    """The core table's cell of `method` at `seed` with `knob` set to `value`."""
    return with_knob(cell_config(TABLES.get(TABLE), method, seed, "rules", 2), knob, value)


def table_value(method: str, knob: str) -> str:
    """The knob's value in the core table's own cell of `method` (what `--reuse` runs were run with)."""
    value: Any = cell_config(TABLES.get(TABLE), method, 0, "rules", 2)
    for part in knob.split("."):
        value = getattr(value, part)
    return str(value).lower() if isinstance(value, bool) else str(value)


def run_dir(method: str, knob: str, value: str, seed: int, out: Path, reuse: Path | None) -> Path:
    """Where the cell runs: the core table's finished cell when `reuse` holds it and `value` is the
    table's own."""
    if reuse is not None and value == table_value(method, knob):
        run = reuse / f"{method}_seed{seed}"
        if not run.is_dir():
            raise FileNotFoundError(f"--reuse {reuse}: no run {method}_seed{seed} there")
        return run
    return out / f"{method}__{knob}" / f"{value.replace('+', '_')}_seed{seed}"


def run_verdicts(run: Path) -> dict[str, int]:
    """The run's diagnoses and their verdicts over every round (its metrics rows' `critic` counts); all
    zero for a method without a critic."""
    out = {"diagnoses": 0, "validated": 0, "refuted": 0, "inconclusive": 0}
    for row in metrics_rows(run):
        critic = row.get("critic") or {}
        out["diagnoses"] += critic.get("diagnoses", 0)
        for k in ("validated", "refuted", "inconclusive"):
            out[k] += critic.get("verdicts", {}).get(k, 0)
    return out


def one_cell(method: str, knob: str, value: str, seed: int, *, out: Path, reuse: Path | None, boots: Path,
             kept: Path, scenes: Sequence[Any], pool: Any) -> dict[str, Any]:
    cfg, t0 = knob_config(method, knob, value, seed), time.perf_counter()
    run = run_dir(method, knob, value, seed, out, reuse)
    if len(metrics_rows(run)) < cfg.rounds + 1:
        if reuse is not None and run.parent == reuse:
            raise RuntimeError(f"{run} has not finished its {cfg.rounds} rounds: finish the table first")
        boot = shared_bootstrap(TABLES.get(TABLE), seed, "rules", 2, boots, kept)
        seed_cell(run, boot)
        run_cell(cfg, run)
    policy = run / "policy" / f"round_{cfg.rounds:02d}.safetensors"
    got = evaluate(policy, scenes, seed, pool, cfg.rollout_max_steps)
    return {"method": method, "knob": knob, "value": value, "seed": seed, "rounds": cfg.rounds,
            "run_dir": str(run), "policy": sha256(policy), "verdicts": run_verdicts(run),
            **{split: {f: got[f][split] for f in cfg.families} for split in SPLITS},
            "wall_s": round(time.perf_counter() - t0, 1), "code_commit": provenance("")["commit"]}


def _avg(cell: dict[str, Any], split: str) -> float:
    return sum(cell[split].values()) / len(cell[split])


def markdown(cells: Sequence[dict[str, Any]]) -> str:
    """One table per (method, knob): each value's dev success and its OOD difference from the reference
    (the first value its records name), paired by seed, and the commands that made its records."""
    out = []
    for group in dict.fromkeys((c["method"], c["knob"]) for c in cells):
        cs = [c for c in cells if (c["method"], c["knob"]) == group]
        ref = cs[0]["reference"]
        by = {v: {c["seed"]: c for c in cs if c["value"] == v} for v in dict.fromkeys(c["value"] for c in cs)}
        rows = []
        for v, seeds in sorted(by.items(), key=lambda kv: kv[0] != ref):
            shared = sorted(set(seeds) & set(by.get(ref, {})))
            diff = mean_se([_avg(seeds[k], "ood") - _avg(by[ref][k], "ood") for k in shared]) \
                if v != ref and shared else None
            show = [mean_se([_avg(c, split) for c in seeds.values()]) for split in SPLITS]
            paired = "–" if diff is None else f"{diff['mean']:+.1f} ± {diff['se']:.1f} ({len(shared)} seeds)"
            counted = [c["verdicts"] for c in seeds.values() if "verdicts" in c]
            verdicts = "–" if len(counted) < len(seeds) or not any(n["diagnoses"] for n in counted) else \
                " / ".join(str(sum(n[k] for n in counted)) for k in ("validated", "refuted", "inconclusive",
                                                                     "diagnoses"))
            rows.append((f"`{v}`", *(f"{m['mean']:.1f} ± {m['se']:.1f}" for m in show), paired, verdicts,
                         sorted(seeds)))
        head = ("value", *(f"dev {s.upper()}" for s in SPLITS), f"dev OOD − `{ref}`, paired",
                "validated / refuted / inconclusive / diagnoses (all rounds, all seeds)", "seeds")
        commands = ", ".join(f"`{c}`" for c in dict.fromkeys(c.get("command", "–") for c in cs))
        out += [f"**`{group[0]}`, `{group[1]}`**", "", *md_table(head, rows), "", f"Command: {commands}", ""]
    return "\n".join(out) + ("\nDevelopment scenes only (`studies.update_dev`'s); success in %, mean ± SE "
                             "over seeds.\n")


def pair_section(results: Path, cells: Sequence[str], command: str) -> str:
    """Each `method:knob=value`'s recorded dev OOD per seed, and the first paired against each of the others
    by seed (`experiments.table.table_power.paired`: mean ± SE, 95 % t interval); a cell with no record is a
    ValueError."""
    from experiments.table.table_power import paired

    got: dict[str, dict[int, dict[str, Any]]] = {}
    for c in cells:
        method, _, kv = c.partition(":")
        knob, _, value = kv.partition("=")
        folder = results / "knob_dev" / f"{method}__{knob}"
        recs = sorted(folder.glob(f"{value.replace('+', '_')}_seed*.json"))
        if not method or not knob or not value or not recs:
            raise ValueError(f"--pair {c!r}: no record under {results / 'knob_dev'} (METHOD:KNOB=VALUE)")
        got[c] = {r["seed"]: r for r in (json.loads(p.read_text()) for p in recs)}
    base = cells[0]
    rows = []
    for c in cells:
        d = paired(got, c, base=base) if c != base else None
        rows.append((f"`{c}`", ", ".join(f"{s}: {_avg(r, 'ood'):.1f}" for s, r in sorted(got[c].items())),
                     "–" if d is None else f"{d['mean']:+.1f} ± {d['se']:.1f} ({len(d['seeds'])} seeds)",
                     "–" if d is None else f"[{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}]"))
    head = ("cell", "dev OOD by seed", f"`{base}` − cell, paired", "95 % t interval")
    return "\n".join([f"**`{base}` against the others**", "", *md_table(head, rows), "",
                      f"Command: `{command}`", ""])


def write_pairs(results: Path, cells: Sequence[str], command: str) -> Path:
    """Add (or replace) the `--pair` section of `cells` in `knob_dev_pairs.md`."""
    page = results / "knob_dev_pairs.md"
    sections = json.loads(page.with_suffix(".json").read_text()) if page.with_suffix(".json").exists() else {}
    sections[",".join(cells)] = pair_section(results, cells, command)
    page.with_suffix(".json").write_text(json.dumps(sections, indent=1) + "\n")
    page.write_text("\n".join(sections.values()) + "\nDevelopment scenes only; success in %.\n")
    return page


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.knob_dev", __doc__)
    ap.add_argument("--method", default="coda", help="a method of the core table (default coda)")
    ap.add_argument("--pair", help="METHOD:KNOB=VALUE,…: pair recorded cells by seed (nothing runs)")
    ap.add_argument("--knob",
                    help="PATH=V1,V2,…: a dotted RunConfig field and its values, the first the reference")
    ap.add_argument("--seeds", type=seed_list, default=[0, 1, 2], help="N (seeds 0..N-1) or a list")
    ap.add_argument("--per-split", type=int, default=25, help="development scenes per family and split")
    ap.add_argument("--reuse", type=Path, help="a folder whose <method>_seed<k> runs are the cells of the "
                                               "table's own value")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "knob_dev", help="the cells' runs")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where knob_dev/ and knob_dev.md go (default runs/results/findings)")
    a = ap.parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m studies.knob_dev " + " ".join(given)).strip()
    if a.pair:
        try:
            cells = [c for c in a.pair.split(",") if c]
            if len(cells) < 2:
                raise ValueError("--pair needs at least two cells")
            print(write_pairs(a.results, cells, command).read_text())
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if a.knob is None:
        print("error: --knob (or --pair) is required", file=sys.stderr)
        return 2
    try:
        knob, _, listed = a.knob.partition("=")
        values = list(dict.fromkeys(v.strip() for v in listed.split(",") if v.strip()))
        if not knob or len(values) < 2:
            raise ValueError(f"--knob {a.knob!r}: PATH=V1,V2,… with at least two values")
        if a.per_split < 1:
            raise ValueError("--per-split must be at least 1")
        if a.reuse is not None and not a.reuse.is_dir():
            raise ValueError(f"--reuse {a.reuse}: no such folder")
        for v in values:  # every value fits the field and passes the config's checks before any work
            knob_config(a.method, knob, v, a.seeds[0])
    except (KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from sim.pool import EpisodePool

    folder = a.results / "knob_dev" / f"{a.method}__{knob}"
    folder.mkdir(parents=True, exist_ok=True)
    families = knob_config(a.method, knob, values[0], 0).families
    with EpisodePool(2) as pool:
        scenes = dev_scenes(families, a.per_split, a.out / f"dev_scenes_n{a.per_split}", pool)
        for seed in a.seeds:
            for v in values:
                rec = folder / f"{v.replace('+', '_')}_seed{seed}.json"
                if rec.exists():
                    continue
                res = one_cell(a.method, knob, v, seed, out=a.out, reuse=a.reuse, boots=a.out / "bootstraps",
                               kept=ROOT / "docs" / "results", scenes=scenes, pool=pool)
                res |= {"reference": values[0], "command": command}
                rec.write_text(json.dumps(res, indent=1) + "\n")
                print(f"{a.method} {knob}={v} seed {seed}: dev OOD {_avg(res, 'ood'):.1f} %", flush=True)
                cells = [json.loads(p.read_text()) for p in sorted((a.results / "knob_dev").glob("*/*.json"))]
                (a.results / "knob_dev.md").write_text(markdown(cells))
    print((a.results / "knob_dev.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
