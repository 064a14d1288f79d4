"""Table 1 at laptop scale: every method of the paper's Table 1 on the same families, at the same generation
budget (accepted scenes per family per round), evaluated on the frozen suites (`experiments.suites`).

    python -m experiments.table1 --preset smoke                      # the harness end to end (minutes)
    python -m experiments.table1 --preset default --seeds 3 --commit # the table (resumes; commits each cell)
    python -m experiments.table1 --preset default --methods coda,scalar --seeds 1
    python -m experiments.table1 --preset rounds3 --seeds 5 --commit  # a third round on Table 1's cells

Each (method, seed) cell is an ordinary run directory (`<out>/<method>_seed<k>/`, made by
`python -m agents.run`), so a killed table resumes where it stopped: finished cells are skipped, an
interrupted cell continues with `agents.run --resume`. The bootstrap SFT of a seed is computed once (in
`<out>/_bootstrap_seed<k>/`) and copied into every cell that bootstraps; each cell's `policy/round_00.pt`
is then checked against it by hash. Every finished cell writes `<results>/<table>/<method>_seed<k>.json`
(committed with `--commit`), and the table — `<results>/<table>.json` (schema in `aggregate`) and
`<table>.md` — is rebuilt from whatever cells exist. A table that extends another with more rounds
(`rounds3`) forks that table's finished cells after their last round and runs only the rounds it adds
(`experiments.table_fork`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import resource
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.config import METHODS, PRESETS, CriticConfig, RunConfig
from common.cli import seed_list
from common.registry import Registry
from experiments import suites as frozen
from experiments.table_record import ROOT, cell_record, metrics_rows, provenance, sha256
from experiments.table_stats import TABLE_METHODS, aggregate, compute, load_bootstraps, markdown
from sim.pool import EXECUTORS

if TYPE_CHECKING:
    from sim.pool import EpisodePool

# the policy shipped with the code: Table 1's seed-0 bootstrap (`coda_policy/pretrained/README.md`)
PRETRAINED = Path(__file__).resolve().parents[1] / "coda_policy" / "pretrained" / "seed_sft_4fam.pt"
SHARED_BOOTSTRAP = ("scenes/round_00", "validity/round_00", "episodes/round_00", "programs/round_00",
                    "policy/round_00.pt", "train/round_00.json")


@dataclass(frozen=True, kw_only=True)
class TablePreset:
    """One size of the table."""

    # the agents.run preset every cell starts from, and the fields this table changes in it
    run_preset: str
    overrides: dict[str, Any] = field(default_factory=dict)
    # default seeds (cells per method)
    seeds: int = 3
    # frozen-suite scenes per family and split in the evaluation (None: all)
    per_split: int | None = None
    # the split every round's policy is evaluated on (the curves); the final policy sees every split
    curve_split: str = "ood"
    # name of the table's files under the results directory
    table: str = "table1"
    # the cells' run-config label is "<run_preset>+<label>" (default: the table's name); a table that shares
    # another's cells (the ablations share Table 1's CoDA cells and bootstraps) takes that table's label, and
    # reads and keeps each seed's bootstrap (record and policy) in that table's folder (`boot_home`)
    label: str | None = None
    # a table preset whose cells these are with more rounds: a cell starts as a fork of that table's
    # finished run at its last round (`extended_cell`), so the shared rounds are computed once
    extends: str | None = None


TABLES: Registry[TablePreset] = Registry("table preset")
# The harness end to end in a few minutes on 2 cores: one family, one round, one scene per split.
TABLES.register("smoke", TablePreset(run_preset="smoke", overrides={"rounds": 1}, seeds=1, per_split=1,
                                     table="table1_smoke"))
# The table on the paper's four families, sized for ≤ 3 h of compute on 2 CPU cores over several sittings.
# Variants move three factors at once (every method that has variants: FINDINGS #5 found that placing
# scenes where many factors are out of distribution is what lifts OOD success at this budget; three of a
# family's ~10 movable factors, so the critic can still tell which one failed), and the critic diagnoses
# up to eight failures a round (two a family; verification episodes are measurement, not budget), each
# under the failing scene's other OOD factors (`CriticConfig.ood_context`: with several factors moved, one
# factor moved alone on the seed distribution was refuted 12 times of 16, FINDINGS #8). Set by reasoning
# and the loop's own rollouts, never on the frozen suites.
TABLES.register("default", TablePreset(
    run_preset="default", seeds=3, per_split=10,
    overrides={"llm": "rules", "rounds": 2, "budget": 6, "max_arms": 3, "eval_id": 2, "eval_ood": 2,
               "thumbnails": False, "variant_factors": 3, "diagnose_max": 8,
               "critic": CriticConfig(retries=0, allow_ood=True, ood_context=True)}))
# The two diagnostic presets of FINDINGS #9-#10 (`default_demo_update`, `default_aw_step`) measured the
# weighted update as it was before FINDINGS #11, while a bug drew its "rollout" half from every chunk; they
# are gone with that update, and their cells are kept in docs/results/findings/table1_mask_bug/.
# The paper's shape: five rounds at budget 8 (many hours on 2 cores).
# Table 1's `default` with a third round, so memory's modes (founded in rounds 1–2) have a round to steer:
# each cell forks Table 1's finished cell after round 2 (FINDINGS #12: the two-round table measures the
# update and the exploration, not the memory). Its bootstraps are Table 1's.
TABLES.register("rounds3", dataclasses.replace(
    TABLES.get("default"), table="table1_rounds3", label="table1", extends="default",
    overrides={**TABLES.get("default").overrides, "rounds": 3}))
# Table 1's `default` cells run again from its kept bootstraps, all at one commit, each timed in CPU
# seconds (`run_cpu_s`): what the preset costs (#10: ≤ 3 h on 2 cores). Run with its own --out.
TABLES.register("timed", dataclasses.replace(TABLES.get("default"), table="table1_timed", label="table1"))
TABLES.register("full", TablePreset(run_preset="default", seeds=3, per_split=10, table="table1_full",
                                    overrides={"llm": "rules", "rounds": 5, "thumbnails": False}))


# ---- cells ------------------------------------------------------------------------------------------------
def cell_config(preset: TablePreset, method: str, seed: int, critic: str, workers: int) -> RunConfig:
    """The RunConfig of one cell: the table's run preset, its overrides, the method, seed and critic."""
    base = PRESETS.get(preset.run_preset)
    over = {**preset.overrides, "method": method, "seed": seed, "workers": workers,
            "preset": f"{preset.run_preset}+{preset.label or preset.table}"}
    if critic != "rules":
        over["llm"] = critic
    return dataclasses.replace(base, **over)


def _agents_run(args: list[str], log: Path) -> None:
    """`python -m agents.run ARGS`, output to `log`; a failed run stops the table with its log's tail."""
    with log.open("a") as out:
        done = subprocess.run([sys.executable, "-m", "agents.run", *args, "--quiet"], cwd=ROOT,
                              stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise RuntimeError(f"python -m agents.run {' '.join(args)} failed (exit {done.returncode}); "
                           f"log {log}:\n{tail}")


def children_cpu_s() -> float:
    """CPU s of finished child processes and their descendants (around one `agents.run`: that cell's)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_cell(cfg: RunConfig, run: Path, where: Sequence[str] = ()) -> None:
    """Start or continue the cell's run until it has every round; `where` are agents.run's executor flags
    (`--executor ray --ray-address ADDR`), which change where its simulation work runs, never its results."""
    if len(metrics_rows(run)) >= cfg.rounds + 1:
        return
    run.mkdir(parents=True, exist_ok=True)
    if (run / "trace.sqlite").exists():
        _agents_run(["--out", str(run), "--resume", *where], run / "agents_run.log")
        return
    cfg_file = run / "table_config.json"
    cfg_file.write_text(cfg.to_json())
    _agents_run(["--config", str(cfg_file), "--out", str(run), *where], run / "agents_run.log")


def boot_home(preset: TablePreset) -> str:
    """The results folder that holds the seeds' bootstraps (records and kept policies) of `preset`'s cells:
    the label's table when it shares another table's cells, else its own — one record per bootstrap."""
    return preset.label or preset.table


def bootstrap_cell(preset: TablePreset, seed: int, critic: str, workers: int,
                   out: Path) -> tuple[RunConfig, Path]:
    """The config and run directory of the seed's bootstrap: round 0 only, SFT on seed demonstrations."""
    cfg = dataclasses.replace(cell_config(preset, "sft", seed, critic, workers), rounds=0)
    return cfg, out / f"_bootstrap_seed{seed}"


def kept_bootstrap(results: Path, table: str, seed: int) -> Path | None:
    """The seed's bootstrap policy as committed — `<results>/<table>/bootstrap/seed<k>_round_00.pt`, or the
    shipped pretrained policy — whose SHA-256 is the one the seed's bootstrap record names (any kept file
    when there is no record yet); None when neither is."""
    folder = results / table / "bootstrap"
    record = folder / f"seed{seed}.json"
    want = json.loads(record.read_text())["bootstrap_sha256"] if record.exists() else None
    for path in (folder / f"seed{seed}_round_00.pt", PRETRAINED):
        if path.is_file() and (sha256(path) == want if want else path.parent == folder):
            return path
    return None


def bootstrap_files(results: Path, table: str, seed: int) -> list[Path]:
    """The seed's kept bootstrap policy under `results`, to commit beside its record (none when it is the
    shipped pretrained file)."""
    kept = kept_bootstrap(results, table, seed)
    return [kept] if kept is not None and kept.parent == results / table / "bootstrap" else []


def kept_bootstrap_cell(preset: TablePreset, seed: int, critic: str, workers: int, out: Path,
                        results: Path) -> tuple[RunConfig, Path]:
    """`bootstrap_cell`, starting from the seed's kept policy (`kept_bootstrap`) instead of training one —
    SFT does not reproduce a policy bit for bit on another machine, and every cell of a seed must share it.
    A seed that has a record but no kept policy (and no run) stops with an error: a new bootstrap could no
    longer be compared with its recorded cells."""
    cfg, run = bootstrap_cell(preset, seed, critic, workers, out)
    if (run / "trace.sqlite").exists():
        return cfg, run
    home = boot_home(preset)
    kept = kept_bootstrap(results, home, seed)
    if kept is not None:
        learn = dataclasses.replace(cfg.learn, init_policy=str(kept.resolve()), sft_steps=0)
        return dataclasses.replace(cfg, learn=learn), run
    if (results / home / "bootstrap" / f"seed{seed}.json").exists():
        raise RuntimeError(f"seed {seed}'s bootstrap is recorded ({results / home}/bootstrap/"
                           f"seed{seed}.json) but its policy is neither in {run} nor kept as "
                           f"seed{seed}_round_00.pt: a new bootstrap would not match the seed's cells; "
                           "move the seed's records aside to run it again in full")
    return cfg, run


def keep_bootstrap(preset: TablePreset, seed: int, run: Path, results: Path) -> None:
    """After the bootstrap ran: its round-0 policy is the kept one (copied over the run's re-saved file), or
    — newly trained — copied under `results` to be committed with the seed's record."""
    policy = run / "policy" / "round_00.pt"
    kept = kept_bootstrap(results, boot_home(preset), seed)
    if kept is not None and sha256(kept) != sha256(policy):
        shutil.copy2(kept, policy)
    elif kept is None:
        dst = results / boot_home(preset) / "bootstrap" / f"seed{seed}_round_00.pt"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(policy, dst)


def shared_bootstrap(preset: TablePreset, seed: int, critic: str, workers: int, out: Path,
                     results: Path | None = None) -> Path:
    """The seed's bootstrap, run once; with `results`, from (or kept as) the committed policy
    (`kept_bootstrap_cell`, `keep_bootstrap`)."""
    if results is None:
        cfg, run = bootstrap_cell(preset, seed, critic, workers, out)
        run_cell(cfg, run)
        return run
    cfg, run = kept_bootstrap_cell(preset, seed, critic, workers, out, results)
    run_cell(cfg, run)
    keep_bootstrap(preset, seed, run, results)
    return run


def seed_cell(cell: Path, boot: Path) -> None:
    """Copy the shared bootstrap's round-0 artifacts into a cell that has not started."""
    if (cell / "trace.sqlite").exists():
        return
    for rel in SHARED_BOOTSTRAP:
        src, dst = boot / rel, cell / rel
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        elif src.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


# ---- evaluation on the frozen suites ----------------------------------------------------------------------
def evaluate(policy: Path, scenes: Sequence[frozen.SuiteScene], seed: int, pool: EpisodePool,
             max_steps: int | None) -> dict[str, dict[str, float]]:
    """Success (%) of `policy` per family and split on `scenes`."""
    from coda_policy.awr import SeededPolicy
    from sim.pool import EpisodeJob

    jobs = [EpisodeJob(scene=s.load(), policy=SeededPolicy(str(policy), seed), max_steps=max_steps)
            for s in scenes]
    results = pool.run(jobs)
    acc: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for s, r in zip(scenes, results, strict=True):
        if r.error is not None:
            raise RuntimeError(f"evaluation episode on {s.path} failed: {r.error}")
        acc[s.family][s.split].append(r.success)
    return {f: {k: 100.0 * sum(v) / len(v) for k, v in splits.items()} for f, splits in acc.items()}


def evaluate_cell(cfg: RunConfig, run: Path, preset: TablePreset, pool: EpisodePool,
                  shared: Path | None = None) -> dict[str, Any]:
    """The cell's final policy on every split, each round's on the curve split; cached in the run dir and,
    by the policy file's hash, in `shared` (the bootstrap policy every SFT-started cell of a seed shares is
    evaluated once)."""
    cache = run / "suite_eval.json"
    done = json.loads(cache.read_text()) if cache.exists() else {}
    scenes = frozen.suite(cfg.families, per_split=preset.per_split)
    for r in range(cfg.rounds + 1):
        key = f"round_{r:02d}"
        if key in done:
            continue
        policy = run / "policy" / f"{key}.pt"
        split = frozen.SPLITS if r == cfg.rounds else (preset.curve_split,)
        what = {"policy": sha256(policy), "seed": cfg.seed, "splits": list(split),
                "families": list(cfg.families), "per_split": preset.per_split,
                "max_steps": cfg.rollout_max_steps}
        hit = shared / f"{hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:20]}.json" \
            if shared is not None else None
        if hit is not None and hit.exists():
            done[key] = json.loads(hit.read_text())
        else:
            done[key] = evaluate(policy, [s for s in scenes if s.split in split], cfg.seed, pool,
                                 cfg.rollout_max_steps)
            if hit is not None:
                hit.parent.mkdir(parents=True, exist_ok=True)
                hit.write_text(json.dumps(done[key]))
        cache.write_text(json.dumps(done, indent=1))
    return done


def bootstrap_record(preset: TablePreset, seed: int, critic: str, workers: int, out: Path, results: Path,
                     pool: EpisodePool) -> Path:
    """The seed's shared bootstrap policy on every split of the frozen suites, recorded once as
    `<results>/<boot_home>/bootstrap/seed<k>.json`: what each cell's final policy is compared with
    (forgetting: ID success lost; gain: OOD success won)."""
    path = results / boot_home(preset) / "bootstrap" / f"seed{seed}.json"
    if path.exists():
        return path
    t0 = time.perf_counter()
    boot, (cfg, _) = shared_bootstrap(preset, seed, critic, workers, out, results), bootstrap_cell(
        preset, seed, critic, workers, out)
    t1 = time.perf_counter()
    evals = evaluate_cell(cfg, boot, preset, pool, shared=out / "_eval_cache")["round_00"]
    took = {"wall_s": round(t1 - t0, 1), "eval_s": round(time.perf_counter() - t1, 1)}  # run (or reuse), eval
    path.parent.mkdir(parents=True, exist_ok=True)
    splits = {split: {f: evals[f][split] for f in cfg.families} for split in frozen.SPLITS}
    path.write_text(json.dumps({"seed": seed, "bootstrap_sha256": sha256(boot / "policy" / "round_00.pt"),
                                **splits, **took, "code_commit": provenance("")["commit"]}, indent=1) + "\n")
    return path


def write_table(results: Path, preset: TablePreset, preset_name: str, command: str) -> dict[str, Any]:
    cells = [json.loads(p.read_text()) for p in sorted((results / preset.table).glob("*_seed*.json"))]
    table = aggregate(cells, preset_name, load_bootstraps(results, boot_home(preset)))
    if boot_home(preset) != preset.table:  # another table's bootstraps: its compute, not this one's
        table["compute"] = compute(cells, {})
    meta = provenance(command)
    meta["cell_commits"] = sorted({c.get("code_commit", "unrecorded") for c in cells})
    table["provenance"] = meta
    (results / f"{preset.table}.json").write_text(json.dumps(table, indent=1) + "\n")
    from experiments.plots import make_plots, write_html

    plots = make_plots(results, preset.table)
    images = "".join(f"\n![{p.stem}]({p.name})\n" for p in plots)
    (results / f"{preset.table}.md").write_text(markdown(table, meta) + images)
    write_html(results, preset.table, plots)
    return table


def table_files(results: Path, table: str) -> list[Path]:
    """What a rebuilt table consists of: its JSON, its markdown and the page and plots the markdown shows."""
    files = [results / f"{table}.json", results / f"{table}.md", results / f"{table}.html",
             *sorted(results.glob(f"{table}_*.png"))]
    return [f for f in files if f.exists()]


def _commit(paths: Sequence[Path], message: str) -> None:
    subprocess.run(["git", "add", *map(str, paths)], cwd=ROOT, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message, "--", *map(str, paths)], cwd=ROOT, check=False)


def run_table(preset_name: str, methods: Sequence[str], seeds: Sequence[int], *, critic: str, workers: int,
              out: Path, results: Path, commit: bool, command: str, log: Any = print, executor: str = "local",
              ray_address: str | None = None) -> dict[str, Any]:
    """Every (method, seed) cell not yet recorded, then the table."""
    preset = TABLES.get(preset_name)

    def write() -> dict[str, Any]:
        return write_table(results, preset, preset_name, command)

    run_cells(preset, preset_name, methods, seeds, critic=critic, workers=workers, out=out, results=results,
              commit=commit, write=write, log=log, executor=executor, ray_address=ray_address)
    return write()


def run_cells(preset: TablePreset, preset_name: str, methods: Sequence[str], seeds: Sequence[int], *,
              critic: str, workers: int, out: Path, results: Path, commit: bool, write: Any,
              log: Any = print, executor: str = "local", ray_address: str | None = None) -> None:
    """Every (method, seed) cell of `preset` not yet recorded under `results/<preset.table>/`; `write()`
    rebuilds the table after each finished cell. With `executor` "ray" the cells run as Ray tasks across the
    cluster (`experiments.ray_cells`), their episodes and the evaluation as Ray tasks too."""
    from sim.pool import make_pool

    (results / preset.table).mkdir(parents=True, exist_ok=True)
    # the evaluation's workers, started once for the whole table
    with make_pool(executor, workers, address=ray_address) as pool:
        if executor == "ray":
            from experiments.ray_cells import run_cells_on_ray

            run_cells_on_ray(preset, preset_name, methods, seeds, critic=critic, workers=workers, out=out,
                             results=results, commit=commit, write=write, pool=pool, log=log)
            return
        for seed in seeds:
            _run_seed(preset, preset_name, methods, seed, critic=critic, workers=workers, out=out,
                      results=results, commit=commit, write=write, pool=pool, log=log)


def _run_seed(preset: TablePreset, preset_name: str, methods: Sequence[str], seed: int, *, critic: str,
              workers: int, out: Path, results: Path, commit: bool, write: Any, pool: EpisodePool,
              log: Any) -> None:
    """The cells of one seed (they share its bootstrap)."""
    boot: Path | None = None
    if any(METHODS.get(m).bootstrap_sft for m in methods):
        path = bootstrap_record(preset, seed, critic, workers, out, results, pool)
        if commit:
            _commit([path, *bootstrap_files(results, boot_home(preset), seed)],
                    f"{preset.table} {preset_name}: the bootstrap of seed {seed} on the suites")
    for method in methods:
        todo = pending_cell(preset, method, seed, critic, workers, out, results, log)
        if todo is None:
            continue
        cfg, run, record = todo
        t0, cpu0 = time.perf_counter(), children_cpu_s()
        boot_hash = None
        if cfg.method_config.bootstrap_sft:
            boot = boot or shared_bootstrap(preset, seed, critic, workers, out, results)
            boot_hash = sha256(boot / "policy" / "round_00.pt")
            seed_cell(run, boot)
        log(f"{method} seed {seed}: running {cfg.rounds} rounds in {run}")
        run_cell(cfg, run)
        finish_cell(cfg, run, preset, preset_name, record, time.perf_counter() - t0, boot_hash, pool=pool,
                    out=out, results=results, commit=commit, write=write, log=log,
                    run_cpu_s=children_cpu_s() - cpu0)


def pending_cell(preset: TablePreset, method: str, seed: int, critic: str, workers: int, out: Path,
                 results: Path, log: Any) -> tuple[RunConfig, Path, Path] | None:
    """(config, run directory, record path) of a cell still to run; None (and a log line) when recorded."""
    record = results / preset.table / f"{method}_seed{seed}.json"
    if record.exists():
        log(f"{method} seed {seed}: recorded, skipped")
        return None
    cfg, run = cell_config(preset, method, seed, critic, workers), out / f"{method}_seed{seed}"
    if preset.extends is not None and not run.exists():
        from experiments.table_fork import extended_cell

        extended_cell(preset, cfg, run, out.parent / f"table1_{preset.extends}" / run.name, log)
    return cfg, run, record


def finish_cell(cfg: RunConfig, run: Path, preset: TablePreset, preset_name: str, record: Path, wall_s: float,
                boot_hash: str | None, *, pool: Any, out: Path, results: Path, commit: bool, write: Any,
                log: Any, run_cpu_s: float | None = None) -> None:
    """A finished cell's run on the frozen suites → its record (checked against the shared bootstrap), the
    table rebuilt, and with `commit` both committed."""
    t0 = time.perf_counter()
    evals = evaluate_cell(cfg, run, preset, pool, shared=out / "_eval_cache")
    rec = {**cell_record(cfg, run, evals, wall_s, boot_hash, preset_name),
           "eval_s": round(time.perf_counter() - t0, 1),
           **({} if run_cpu_s is None else {"run_cpu_s": round(run_cpu_s, 1)})}
    if boot_hash is not None and not rec["bootstrap_shared"]:
        raise RuntimeError(f"{run}: its round-0 policy is not the shared bootstrap's "
                           f"({rec['bootstrap_sha256'][:12]} vs {boot_hash[:12]})")
    record.write_text(json.dumps(rec, indent=1) + "\n")
    write()
    ood = sum(rec["ood"].values()) / len(rec["ood"])
    log(f"{cfg.method} seed {cfg.seed}: avg OOD {ood:.1f} % ({rec['wall_s']:.0f} s)")
    if commit:
        _commit([record, *table_files(results, preset.table)],
                f"{preset.table} {preset_name}: {cfg.method} seed {cfg.seed} (avg OOD {ood:.1f} %)")


def cell_arguments(ap: argparse.ArgumentParser) -> None:
    """The options every table of cells shares (Table 1, the ablations)."""
    ap.add_argument("--seeds", type=seed_list, help="N: seeds 0..N-1; or a comma-separated list of seeds, "
                    "e.g. 0,2 (default: the preset's)")
    ap.add_argument("--workers", type=int, default=2, help="episode-pool workers per cell")
    ap.add_argument("--results", type=Path, default=ROOT / "docs" / "results", help="where the table goes")
    ap.add_argument("--commit", action="store_true", help="git-commit each finished cell and the table")
    ap.add_argument("--executor", default="local", choices=EXECUTORS,
                    help="local (cells one after another here) or ray (cells as Ray tasks across the "
                         "cluster, "
                         "their episodes too; --out must be on storage every node sees)")
    ap.add_argument("--ray-address", help="with --executor ray: local (start one here; the default), auto "
                    "(the "
                    "cluster `ray start --head` made) or HOST:PORT")


def checked_cells(presets: Registry[TablePreset], a: argparse.Namespace) -> tuple[TablePreset, list[str]]:
    """The preset and methods the options name, checked before any work (KeyError/ValueError/
    FileNotFoundError with the message to print)."""
    preset = presets.get(a.preset)
    methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    for m in methods:
        METHODS.get(m)
    if a.workers < 1:
        raise ValueError("--workers must be at least 1")
    if a.ray_address:
        a.executor = "ray"
    if a.executor == "ray":
        from sim.ray_pool import check_address

        check_address(a.ray_address)
    frozen.manifest()
    return preset, methods


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.table1", description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default", help=f"one of {', '.join(TABLES.names())}")
    ap.add_argument("--methods", default=",".join(TABLE_METHODS), help="comma-separated methods")
    ap.add_argument("--critic", default="rules", choices=("rules", "local", "openai"),
                    help="critic and writers of the diagnosis-driven methods (default rules)")
    ap.add_argument("--out", type=Path, help="the cells' run directories (default runs/table1_<preset>)")
    cell_arguments(ap)
    a = ap.parse_args(argv)
    try:
        preset, methods = checked_cells(TABLES, a)
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    seeds = a.seeds if a.seeds is not None else list(range(preset.seeds))
    out = a.out or ROOT / "runs" / f"table1_{a.preset}"
    command = "python -m experiments.table1 " + " ".join(argv if argv is not None else sys.argv[1:])
    table = run_table(a.preset, methods, seeds, critic=a.critic, workers=a.workers, out=out,
                      results=a.results, commit=a.commit, command=command.strip(), executor=a.executor,
                      ray_address=a.ray_address)
    print((a.results / f"{preset.table}.md").read_text())
    return 0 if table["equal_budget"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
