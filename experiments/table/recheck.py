"""Re-check a table's cells on a never-read suite set: issue #39's rule that a choice made after seeing a
frozen suite's numbers is re-checked on `recheck50` before it is reported, and the report says so.

    python -m experiments.table.recheck --preset core_dr --rows coda@dr,uniform@dr,domain_randomization \\
        --seeds 0,1,2,3,4 --why "the DR background was chosen after reading FINDINGS #48's rows" \\
        --results docs/results --commit

Nothing is trained. Each recorded cell's final policy (the run directory its record names; the run's own
evaluation must give the record's numbers, so the policy is the one the record scored) and its seed's
bootstrap (the cell's round-0 policy, row `bootstrap`) play every split of the set, all its scenes per
family and split. Records go to `<results>/<set>/<table>/<row>_seed<k>.json`, shaped like the table's
cells (so `experiments.table.table_power` reads them too), each finished one committed with `--commit`;
the page `<results>/<set>/<table>.md` gives every row on both sets and each row paired by seed against
`--base`. A record is kept while its policy file is unchanged, so the command resumes.

`--oracle RUNS` adds row `oracle`: each seed's oracle generator of the table's headroom row (`studies.ceiling
--table T --sources ood --budgets 6 --replay yes`, its final policy in the study's `--out` folder RUNS),
so CoDA's share of the oracle's gain can be read on the set too. The policy must be the one its record
(`findings/ceiling_<table>/`) scored: by the record's policy hash, or for the records written before the
hash was kept, by scoring the record's first family's `ood` split of the frozen suites again.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coda_policy.pretrained import sha256
from common.cli import command_parser, seed_list, worker_count
from common.markdown import md_table
from experiments.table import suites as frozen
from experiments.table.presets import TABLES, TablePreset, lender
from experiments.table.record import (
    ROOT,
    SCENES,
    commit_files,
    oracle_folder,
    oracle_name,
    provenance,
    results_dir,
)
from experiments.table.stats import avg_ood, mean_se, ms
from experiments.table.table_power import load_cells, paired

BOOTSTRAP = "bootstrap"
ORACLE = "oracle"
ORACLE_CELL = ("ood", 6, True)  # the headroom row's oracle: the `ood` split's distribution, budget 6, replay
SPLIT_KEYS = ("ood", "ood_single", "instruction", "id")


class RecheckError(RuntimeError):
    """A cell that cannot be re-checked here (its run or policy missing, or not the one its record scored)."""


def final_policy(cell: dict[str, Any]) -> tuple[Path, Path]:
    """(the cell's run directory, its final policy), after checking that the run's own suite evaluation of
    that policy is the record's: a run directory reused or re-run since would re-check another policy."""
    run = Path(cell["run_dir"])
    final = max(cell["curve"])
    policy = run / "policy" / f"{final}.safetensors"
    if not policy.exists():
        raise RecheckError(f"{cell['method']} seed {cell['seed']}: {policy} is not on this machine; a "
                           "re-check needs the cell's run directory as its table left it")
    cache = run / "suite_eval.json"
    own = json.loads(cache.read_text()).get(final) if cache.exists() else None
    if own is None or {f: own[f]["ood"] for f in cell["ood"]} != cell["ood"]:
        raise RecheckError(f"{cell['method']} seed {cell['seed']}: {run}'s evaluation of {final} is not its "
                           "record's; the run directory holds another policy than the one the table scored")
    return run, policy


def lender_name(preset: TablePreset) -> str:
    """The name of the table preset whose cells (and oracle) `preset` shares (`core` for `core_dr`)."""
    home = lender(preset.label or preset.table)
    return next(n for n in TABLES.names() if TABLES.get(n) is home)


def oracle_policy(results: Path, preset: TablePreset, seed: int,
                  runs: Path) -> tuple[Path, dict[str, Any], str]:
    """The table's oracle at `seed` (`ORACLE_CELL`): its final policy under `runs`, its record and the
    record's path under `results` (not yet checked to belong together: `check_oracle`)."""
    name, table = oracle_name(*ORACLE_CELL, seed), lender_name(preset)
    record_path = results / "findings" / oracle_folder(table) / f"{name}.json"
    if not record_path.exists():
        raise RecheckError(f"oracle seed {seed}: no record {record_path}; run `python -m studies.ceiling "
                           f"--table {table} --sources ood --budgets 6 --replay yes` first")
    rec = json.loads(record_path.read_text())
    policy = runs / name / f"round_{rec['rounds']:02d}.safetensors"
    if not policy.exists():
        raise RecheckError(f"oracle seed {seed}: {policy} is not on this machine (--oracle names the "
                           "studies.ceiling --out folder)")
    return policy, rec, str(record_path.relative_to(results))


def check_oracle(policy: Path, rec: dict[str, Any], seed: int, boot: Path, base: dict[str, Any],
                 pool: Any) -> None:
    """That `policy` is the one its ceiling record `rec` scored, from the table's bootstrap `boot`: by the
    record's `policy_sha256`, or, for a record written before it was kept, by scoring the record's first
    family's `ood` split of the frozen suites again (`base`: a cell of the same seed, whose run gives the
    seed's evaluation settings)."""
    if sha256(boot) != rec["bootstrap_sha256"]:
        raise RecheckError(f"oracle seed {seed}: trained from another bootstrap than the table's")
    if "policy_sha256" in rec:  # records since it was kept: the hash says it
        if sha256(policy) != rec["policy_sha256"]:
            raise RecheckError(f"oracle seed {seed}: {policy} is not the policy its record scored")
        return
    from agents.config import RunConfig
    from experiments.table.cells import evaluate

    family = rec["families"][0]
    cfg = RunConfig.from_json((Path(base["run_dir"]) / "config.json").read_text())
    scenes = frozen.suite([family], splits=("ood",), per_split=rec.get("per_split"),
                          set_name=rec.get("suite", frozen.DEFAULT_SET))
    again = evaluate(policy, scenes, cfg.seed, pool, cfg.rollout_max_steps)[family]["ood"]
    if again != rec["ood"][family]:
        raise RecheckError(f"oracle seed {seed}: {policy} scores {again:.1f} % on {family}'s ood split, its "
                           f"record {rec['ood'][family]:.1f}: not the policy the record scored")


def recheck_record(cell: dict[str, Any], row: str, policy: Path, boot: Path, set_name: str, per_split: int,
                   rates: dict[str, Any], source: str) -> dict[str, Any]:
    fams = list(cell["families"])
    return {"method": row, "seed": cell["seed"], "families": fams, "suite": set_name, "per_split": per_split,
            **{k: {f: rates[f][k] for f in fams} for k in SPLIT_KEYS},
            "scenes": rates.get(SCENES), "policy_sha256": sha256(policy),
            "bootstrap_sha256": sha256(boot), "bootstrap_shared": True,
            # the frozen record this re-checks (for the bootstrap row, the cell whose round 0 it read)
            "rechecks": source, "code_commit": provenance("")["commit"]}


def recheck(preset: TablePreset, rows: Sequence[str], seeds: Sequence[int], set_name: str, results: Path,
            workers: int, commit: bool, per_split: int | None = None, log: Any = print,
            oracle: Path | None = None) -> list[Path]:
    """Every (row, seed) cell recorded by `preset`'s table, each seed's bootstrap and, with `oracle` (the
    ceiling study's run folder), its oracle, on `set_name` (the first `per_split` scenes per family and
    split; None: all); the written records' paths."""
    from sim.pool import EpisodePool

    cells = load_cells(*table_folders(results, preset))
    missing = [f"{r} seed {s}" for r in rows for s in seeds if s not in cells.get(r, {})]
    if missing:
        raise RecheckError(f"no record for {', '.join(missing)} in {preset.table}: run the table's cells "
                           "first")
    per_split = per_split or frozen.suite_set(set_name).n
    out = results / set_name / preset.table
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with EpisodePool(workers) as pool:
        for seed in seeds:
            for row in (BOOTSTRAP, *rows, *([ORACLE] if oracle else [])):
                cell = cells[rows[0] if row in (BOOTSTRAP, ORACLE) else row][seed]
                run, policy = final_policy(cell)
                boot = run / "policy" / "round_00.safetensors"
                source = f"{preset.table}/{cell['method']}_seed{seed}.json"
                path = out / f"{row}_seed{seed}.json"
                if row == BOOTSTRAP:
                    policy = boot
                elif row == ORACLE:
                    policy, orec, source = oracle_policy(results, preset, seed, oracle)
                if path.exists() and json.loads(path.read_text())["policy_sha256"] == sha256(policy):
                    continue
                if row == ORACLE:
                    check_oracle(policy, orec, seed, boot, cell, pool)
                rates = evaluate_on(policy, cell, run, set_name, per_split, pool)
                rec = recheck_record(cell, row, policy, boot, set_name, per_split, rates, source)
                path.write_text(json.dumps(rec, indent=1) + "\n")
                log(f"{row} seed {seed}: avg OOD {avg_ood(rec):.1f} % on {set_name}")
                written.append(path)
                if commit:
                    commit_files([path], f"{set_name} re-check of {preset.table}: {row} seed {seed} "
                                         f"(avg OOD {avg_ood(rec):.1f} %)")
    return written


def evaluate_on(policy: Path, cell: dict[str, Any], run: Path, set_name: str, per_split: int,
                pool: Any) -> dict[str, Any]:
    from agents.config import RunConfig
    from experiments.table.cells import evaluate

    cfg = RunConfig.from_json((run / "config.json").read_text())
    scenes = frozen.suite(list(cell["families"]), per_split=per_split, set_name=set_name)
    return evaluate(policy, scenes, cfg.seed, pool, cfg.rollout_max_steps, outcomes=True)


def table_folders(results: Path, preset: TablePreset) -> list[Path]:
    return [results / preset.table, *([results / preset.label] if preset.label else [])]


def page(results: Path, preset: TablePreset, set_name: str, base: str, why: str, command: str) -> str:
    """The re-check's page: each row on the frozen suites and on `set_name` (mean ± SE over the re-checked
    seeds), and every row paired against `base` by seed on `set_name`."""
    again = load_cells(results / set_name / preset.table)
    frozen_cells = load_cells(*table_folders(results, preset))
    lines = [f"# {preset.table} re-checked on `{set_name}`", "",
             f"Why: {why}" if why else "Why: not given.", "",
             f"`{set_name}` is never read by a table or a choice; each row's final policies (and each seed's "
             "bootstrap) were evaluated on it after the table was read. Average OOD success, %, mean ± SE "
             "over seeds.", ""]
    body = []
    for row in sorted(again, key=lambda r: (r != BOOTSTRAP, r)):
        seeds = sorted(again[row])
        if row == ORACLE:
            was = [avg_ood(json.loads((results / again[row][s]["rechecks"]).read_text())) for s in seeds]
        else:
            was = [avg_ood(frozen_cells[row][s]) for s in seeds if s in frozen_cells.get(row, {})]
        body.append((row, ", ".join(map(str, seeds)), ms(mean_se(was)) if row != BOOTSTRAP else "–",
                     ms(mean_se([avg_ood(again[row][s]) for s in seeds])),
                     ms(mean_se([sum(c["id"].values()) / len(c["id"]) for c in again[row].values()]))))
    lines += md_table(("row", "seeds", f"avg OOD, {preset.suite}", f"avg OOD, {set_name}",
                       f"ID, {set_name}"), body)
    diffs = [d for row in sorted(again) if row != base
             for d in [paired(again, row, base=base, per_split=next(iter(again[row].values()))["per_split"])]
             if d is not None]
    if diffs:
        lines += ["", f"`{base}` − row on `{set_name}`, paired by seed:", ""]
        lines += md_table(("row", "per-seed differences (pp)", "mean ± SE", "95 % t interval"),
                          [(d["method"], ", ".join(f"{x:+.1f}" for x in d["diffs"]),
                            f"{d['mean']:+.1f} ± {d['se']:.1f}",
                            f"[{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}]") for d in diffs])
    meta = provenance(command)
    lines += ["", f"Command: `{command}` · commit {meta['commit']} · {meta['versions']}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.recheck", __doc__)
    ap.add_argument("--preset", required=True, help=f"the table preset: one of {', '.join(TABLES.names())}")
    ap.add_argument("--rows", required=True, help="comma-separated rows (as the table names them: coda@dr)")
    ap.add_argument("--seeds", type=seed_list, required=True, help="N: seeds 0..N-1, or a list")
    ap.add_argument("--set", default="recheck50", help="the never-read suite set")
    ap.add_argument("--base", help="the row every other is paired against (default: the first of --rows)")
    ap.add_argument("--why", default="", help="the choice being re-checked, for the page")
    ap.add_argument("--per-split", type=int, help="scenes per family and split (default: the set's all; "
                                                   "fewer only for a smoke test)")
    ap.add_argument("--oracle", type=Path, help="the studies.ceiling --out folder holding the table's oracle "
                                                "policies: adds row `oracle`")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--results", type=Path)
    ap.add_argument("--commit", action="store_true")
    a = ap.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    try:
        preset, results = TABLES.get(a.preset), results_dir(a.results, a.commit)
        frozen.suite_set(a.set)
        if a.set == preset.suite:
            raise RecheckError(f"--set {a.set} is the table's own suite set: a re-check reads another")
        recheck(preset, rows, a.seeds, a.set, results, a.workers, a.commit, a.per_split, oracle=a.oracle)
    except (KeyError, ValueError, RecheckError) as e:
        print(f"experiments.table.recheck: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    # quoted as a shell would need it (`--why` holds spaces and apostrophes)
    command = "python -m experiments.table.recheck " + shlex.join(argv if argv is not None else sys.argv[1:])
    md = results / a.set / f"{preset.table}.md"
    md.write_text(page(results, preset, a.set, a.base or rows[0], a.why, command))
    print(f"wrote {md.relative_to(ROOT) if md.is_relative_to(ROOT) else md}")
    if a.commit:
        commit_files([md], f"{a.set} re-check of {preset.table}: the page")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
