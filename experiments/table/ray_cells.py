"""Table cells as Ray tasks across a cluster (`python -m experiments.table --executor ray`).

Each seed's shared bootstrap runs first, as one task per seed; then every unrecorded (method, seed) cell
runs as a task (`agents.run` in a subprocess on whichever node Ray picks, its episodes in turn Ray tasks on
the same cluster). The driver evaluates each cell as it finishes, writes its record, rebuilds the table and,
with `--commit`, commits it — exactly what the local path does, so a table may be started locally and
finished on a cluster or the other way round. A cell is an ordinary run directory, so a task that dies
(its node lost) is retried and resumes where the run's checkpoint stopped.

What the cluster needs (docs/loop.md, "Scale out on Ray"): the package installed on every node, and `--out` on
storage every node sees under the same path (run directories and checkpoints are plain files there).

Cell tasks reserve no CPU (a cell mostly waits for its episodes, which do); at most `parallel` of them run at
once (default: one per node alive), so a cell's training, which runs in its own process, does not crowd out
the episodes every cell waits for.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CELL_RETRIES = 2  # a cell task whose node died runs again and resumes from its checkpoint


def _cell_task(cfg_json: str, run: str, where: list[str]) -> float:
    """Run (or resume) one cell to its last round on this node; returns its wall seconds."""
    from agents.config import RunConfig
    from experiments.table.cells import run_cell

    t0 = time.perf_counter()
    run_cell(RunConfig.from_json(cfg_json), Path(run), where)
    return time.perf_counter() - t0


def run_cells_on_ray(preset: Any, preset_name: str, methods: Sequence[str], seeds: Sequence[int], *,
                     critic: str, workers: int, out: Path, results: Path, commit: bool, write: Any, pool: Any,
                     log: Any = print, parallel: int | None = None) -> None:
    """The table's unrecorded cells as Ray tasks; each evaluated and recorded by this driver as it lands."""
    import ray

    from agents.config import METHODS
    from experiments.table.cells import (
        boot_home,
        bootstrap_files,
        bootstrap_record,
        finish_cell,
        kept_bootstrap_cell,
        pending_cell,
        seed_cell,
    )
    from experiments.table.record import commit_files, sha256

    address = ray.get_runtime_context().gcs_address
    where = ["--executor", "ray", "--ray-address", address]
    task = ray.remote(_cell_task).options(num_cpus=0, max_retries=CELL_RETRIES, retry_exceptions=False,
                                          scheduling_strategy="SPREAD")
    parallel = parallel or max(1, sum(1 for n in ray.nodes() if n.get("Alive")))

    def bounded(jobs: list[tuple[Any, ...]]) -> Any:
        """Submit (cfg, run, payload) jobs, at most `parallel` in flight; yield (payload, wall_s) as each
        ends."""
        queue, running = list(jobs), {}
        while queue or running:
            while queue and len(running) < parallel:
                cfg, run, payload = queue.pop(0)
                running[task.remote(cfg.to_json(), str(run), where)] = payload
            done, _ = ray.wait(list(running), num_returns=1)
            payload = running.pop(done[0])
            yield payload, ray.get(done[0])  # a cell that failed raises here, with its log's tail

    boot_seeds = [s for s in seeds if any(METHODS.get(m).bootstrap_sft for m in methods)]
    boot_jobs = [(*kept_bootstrap_cell(preset, seed, critic, workers, out, results), seed)
                 for seed in boot_seeds]
    boots: dict[int, Path] = {}
    for seed, _ in bounded(boot_jobs):
        boots[seed] = kept_bootstrap_cell(preset, seed, critic, workers, out, results)[1]
        path = bootstrap_record(preset, seed, critic, workers, out, results, pool)  # evaluated here
        log(f"bootstrap seed {seed}: on the suites")
        if commit:
            commit_files([path, *bootstrap_files(results, boot_home(preset), seed)],
                         f"{preset.table} {preset_name}: the bootstrap of seed {seed} on the suites")
    cells = []
    for seed in seeds:
        for method in methods:
            todo = pending_cell(preset, method, seed, critic, workers, out, results, log)
            if todo is None:
                continue
            cfg, run, record = todo
            boot_hash = None
            if cfg.method_config.bootstrap_sft:
                boot_hash = sha256(boots[seed] / "policy" / "round_00.safetensors")
                seed_cell(run, boots[seed])
            cells.append((cfg, run, (cfg, run, record, boot_hash)))
    log(f"{len(cells)} cells on Ray at {address}, {parallel} at a time")
    for (cfg, run, record, boot_hash), wall_s in bounded(cells):
        finish_cell(cfg, run, preset, preset_name, record, wall_s, boot_hash, pool=pool, out=out,
                    results=results, commit=commit, write=write, log=log)
