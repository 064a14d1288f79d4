"""Table 1 at laptop scale: every method of the paper's Table 1 on the same families, at the same generation
budget (accepted scenes per family per round), evaluated on the frozen suites (`experiments.table.suites`).

    python -m experiments.table --preset smoke                      # the harness end to end (minutes)
    python -m experiments.table --preset default --seeds 3 --commit # the table (resumes; commits each cell)
    python -m experiments.table --preset default --methods coda,scalar --seeds 1
    python -m experiments.table --preset rounds3 --seeds 5 --commit  # a third round on Table 1's cells

Each (method, seed) cell is an ordinary run directory (`<out>/<method>_seed<k>/`, made by `python -m
agents.run`), so a killed table resumes where it stopped: finished cells are skipped, an interrupted cell
continues with `agents.run --resume`. The bootstrap SFT of a seed is computed once (in
`<out>/_bootstrap_seed<k>/`) and copied into every cell that bootstraps; each cell's
`policy/round_00.safetensors` is then checked against it by hash. Every finished cell writes
`<results>/<table>/<method>_seed<k>.json` (committed with `--commit`), and the table —
`<results>/<table>.json` (schema in `aggregate`) and `<table>.md` — is rebuilt from whatever cells exist. A
table that extends another with more rounds (`rounds3`) forks that table's finished cells after their last
round and runs only the rounds it adds (`experiments.table.fork`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.config import METHODS
from common.cli import command_parser, seed_list, worker_count
from common.registry import Registry
from experiments.table import suites as frozen
from experiments.table.cells import (
    boot_home,
    bootstrap_files,
    bootstrap_record,
    children_cpu_s,
    finish_cell,
    pending_cell,
    run_cell,
    seed_cell,
    shared_bootstrap,
)
from experiments.table.presets import TABLES, TablePreset
from experiments.table.record import ROOT, commit_files, provenance, results_dir, sha256
from experiments.table.stats import (
    TABLE_METHODS,
    aggregate,
    compute,
    load_bootstrap_costs,
    load_bootstraps,
    markdown,
)
from sim.pool import EXECUTORS

if TYPE_CHECKING:
    from sim.pool import EpisodePool


def write_table(results: Path, preset: TablePreset, preset_name: str, command: str) -> dict[str, Any]:
    cells = [json.loads(p.read_text()) for p in sorted((results / preset.table).glob("*_seed*.json"))]
    table = aggregate(cells, preset_name, load_bootstraps(results, boot_home(preset)))
    if boot_home(preset) != preset.table:  # another table's bootstraps: their cost only when trained again
        table["compute"] = compute(cells, load_bootstrap_costs(results, preset.table))
    meta = provenance(command)
    meta["cell_commits"] = sorted({c.get("code_commit", "unrecorded") for c in cells})
    table["provenance"] = meta
    (results / f"{preset.table}.json").write_text(json.dumps(table, indent=1) + "\n")
    from experiments.table.plots import make_plots, write_html

    plots = make_plots(results, preset.table)
    images = "".join(f"\n![{p.stem}]({p.name})\n" for p in plots)
    (results / f"{preset.table}.md").write_text(markdown(table, meta) + images)
    write_html(results, preset.table, plots)
    return table


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
    cluster (`experiments.table.ray_cells`), their episodes and the evaluation as Ray tasks too."""
    from sim.pool import make_pool

    (results / preset.table).mkdir(parents=True, exist_ok=True)
    # the evaluation's workers, started once for the whole table
    with make_pool(executor, workers, address=ray_address) as pool:
        if executor == "ray":
            from experiments.table.ray_cells import run_cells_on_ray

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
            commit_files([path, *bootstrap_files(results, boot_home(preset), seed)],
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
            boot_hash = sha256(boot / "policy" / "round_00.safetensors")
            seed_cell(run, boot)
        log(f"{method} seed {seed}: running {cfg.rounds} rounds in {run}")
        run_cell(cfg, run)
        finish_cell(cfg, run, preset, preset_name, record, time.perf_counter() - t0, boot_hash, pool=pool,
                    out=out, results=results, commit=commit, write=write, log=log,
                    run_cpu_s=children_cpu_s() - cpu0)


def cell_arguments(ap: argparse.ArgumentParser) -> None:
    """The options every table of cells shares (Table 1, the ablations)."""
    ap.add_argument("--seeds", type=seed_list, help="N: seeds 0..N-1; or a comma-separated list of seeds, "
                    "e.g. 0,2 (default: the preset's)")
    ap.add_argument("--workers", type=worker_count, default=2, help="episode-pool workers per cell")
    ap.add_argument("--results", type=Path, help="where the records and the table go (default runs/results; "
                    "docs/results for the committed table)")
    ap.add_argument("--commit", action="store_true",
                    help="git-commit each finished cell and the table (needs --results)")
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
    a.results = results_dir(a.results, a.commit)
    if a.ray_address:
        a.executor = "ray"
    if a.executor == "ray":
        from sim.ray_pool import check_address

        check_address(a.ray_address)
    frozen.manifest()
    return preset, methods


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table", __doc__)
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
    command = "python -m experiments.table " + " ".join(argv if argv is not None else sys.argv[1:])
    table = run_table(a.preset, methods, seeds, critic=a.critic, workers=a.workers, out=out,
                      results=a.results, commit=a.commit, command=command.strip(), executor=a.executor,
                      ray_address=a.ray_address)
    print((a.results / f"{preset.table}.md").read_text())
    return 0 if table["equal_budget"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
