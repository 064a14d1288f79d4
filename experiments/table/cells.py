"""One Table 1 cell from start to record: its run config (`cell_config`), the seed's shared bootstrap (run
once, or started from the committed policy), the run itself (`python -m agents.run` in a subprocess, resumed
when interrupted), its evaluation on the frozen suites and its record. `experiments.table.table1` runs the
cells of a table one after another, `experiments.table.ray_cells` as Ray tasks."""

from __future__ import annotations

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.config import PRESETS, RunConfig
from coda_policy import pretrained
from experiments.table import suites as frozen
from experiments.table.presets import TablePreset, lender
from experiments.table.record import (
    ROOT,
    SCENES,
    cell_record,
    commit_files,
    metrics_rows,
    provenance,
    row_name,
    sha256,
    table_files,
)

if TYPE_CHECKING:
    from sim.pool import EpisodePool

# the policy shipped with the code: Table 1's seed-0 bootstrap (`checkpoints/README.md`)
PRETRAINED = pretrained.SEED_SFT_4FAM
SHARED_BOOTSTRAP = ("scenes/round_00", "validity/round_00", "episodes/round_00", "programs/round_00",
                    "policy/round_00.safetensors", "train/round_00.json")
BOOT_POLICY = "seed{seed}_round_00.safetensors"  # a kept bootstrap policy's file name


# ---- cells ------------------------------------------------------------------------------------------------
def cell_config(preset: TablePreset, method: str, seed: int, critic: str, workers: int) -> RunConfig:
    """The RunConfig of one cell: the table's run preset, its overrides, the method, seed and critic."""
    base = PRESETS.get(preset.run_preset)
    over = {**preset.overrides, "method": method, "seed": seed, "workers": workers,
            "preset": f"{preset.run_preset}+{preset.label or preset.table}"}
    if critic != "rules":  # an LLM row: the model is critic and writers
        over["llm"], over["llm_critic"] = critic, True
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


def kept_dir(results: Path, table: str) -> Path:
    """Where `results`' kept bootstrap policies of `table` lie: the repository's committed checkpoints
    (`checkpoints/<table>/`, with the manifest) for the committed results, else beside the records."""
    if results.resolve() == (ROOT / "docs" / "results").resolve():
        return pretrained.ROOT / table
    return results / table / "bootstrap"


def kept_bootstrap(results: Path, table: str, seed: int) -> Path | None:
    """The seed's bootstrap policy as kept — `kept_dir(...)/seed<k>_round_00.safetensors`, or the shipped
    pretrained policy — whose SHA-256 is the one the seed's bootstrap record names (a record written before
    the safetensors conversion names the `.pt`'s: `pretrained.canonical_sha256`; any kept file when there
    is no record yet); None when neither is."""
    record = results / table / "bootstrap" / f"seed{seed}.json"
    want = json.loads(record.read_text())["bootstrap_sha256"] if record.exists() else None
    folder = kept_dir(results, table)
    for path in (folder / BOOT_POLICY.format(seed=seed), PRETRAINED):
        if not path.is_file():
            continue
        if (pretrained.canonical_sha256(sha256(path)) == pretrained.canonical_sha256(want) if want
                else path.parent == folder):
            return path
    return None


def table_bootstrap(preset: TablePreset, results: Path, seed: int) -> Path | None:
    """The seed's kept bootstrap policy for `preset`'s cells: its own table's (`kept_bootstrap`), else that
    of the table it takes its bootstraps from (`TablePreset.bootstraps`), and so on down that table's own."""
    kept = kept_bootstrap(results, boot_home(preset), seed)
    if kept is None and preset.bootstraps is not None:
        return table_bootstrap(lender(preset.bootstraps), results, seed)
    return kept


def _room_needed(cfg: RunConfig, kept: Path) -> int | None:
    """The cell's object-token bound when the kept policy's is lower (a core-space bootstrap starting an
    extended-space table), else None."""
    from coda_policy.checkpoint import read_meta

    want = getattr(cfg.learn.policy, "max_objects", None)
    have = read_meta(kept)["config"].get("max_objects")
    return want if want is not None and have is not None and have < want else None


def bootstrap_files(results: Path, table: str, seed: int) -> list[Path]:
    """The seed's kept bootstrap policy (and the manifest that lists it, in `checkpoints/`), to commit
    beside its record (none when it is the shipped pretrained file)."""
    kept = kept_bootstrap(results, table, seed)
    if kept is None or kept.parent != kept_dir(results, table):
        return []
    return [kept, pretrained.MANIFEST] if kept.is_relative_to(pretrained.ROOT) else [kept]


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
    kept = table_bootstrap(preset, results, seed)
    if kept is not None and (room := _room_needed(cfg, kept)) is not None:
        kept = _roomy_copy(preset, seed, kept, room, results)
    if kept is not None:
        learn = dataclasses.replace(cfg.learn, init_policy=str(kept.resolve()), sft_steps=0)
        return dataclasses.replace(cfg, learn=learn), run
    if (results / home / "bootstrap" / f"seed{seed}.json").exists():
        raise RuntimeError(f"seed {seed}'s bootstrap is recorded ({results / home}/bootstrap/"
                           f"seed{seed}.json) but its policy is neither in {run} nor kept as "
                           f"{kept_dir(results, home) / BOOT_POLICY.format(seed=seed)}: a new bootstrap "
                           "would not match the seed's cells; "
                           "move the seed's records aside to run it again in full")
    return cfg, run


def _roomy_copy(preset: TablePreset, seed: int, kept: Path, room: int, results: Path) -> Path:
    """The lent bootstrap `kept` with its object-token bound raised to `room` (`coda_policy.convert.
    with_room`: the same tensors), kept as this table's own bootstrap of the seed."""
    from coda_policy.convert import with_room

    dst = kept_dir(results, boot_home(preset)) / BOOT_POLICY.format(seed=seed)
    with_room(kept, dst, room)
    if dst.is_relative_to(pretrained.ROOT):
        pretrained.record(dst, f"{kept.relative_to(ROOT) if kept.is_relative_to(ROOT) else kept} with "
                          f"max_objects raised to {room} (`python -m coda_policy.convert {kept.name} "
                          f"--max-objects {room}`), the seed-{seed} bootstrap of `python -m "
                          f"experiments.table`'s {boot_home(preset)} cells at {provenance('')['commit']}",
                          policy="object_token", raised_from={"sha256": sha256(kept)},
                          record=str(Path("docs/results") / boot_home(preset) / "bootstrap"
                                     / f"seed{seed}.json"))
    return dst


def keep_bootstrap(preset: TablePreset, seed: int, run: Path, results: Path) -> None:
    """After the bootstrap ran: its round-0 policy is the kept one (copied over the run's re-saved file), or
    — newly trained — copied under `results` to be committed with the seed's record."""
    policy = run / "policy" / "round_00.safetensors"
    kept = table_bootstrap(preset, results, seed)
    if kept is not None and sha256(kept) != sha256(policy):
        shutil.copy2(kept, policy)
    elif kept is None:
        dst = kept_dir(results, boot_home(preset)) / BOOT_POLICY.format(seed=seed)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(policy, dst)
        if dst.is_relative_to(pretrained.ROOT):
            pretrained.record(dst, f"the seed-{seed} bootstrap of `python -m experiments.table`'s "
                              f"{boot_home(preset)} cells at {provenance('')['commit']}",
                              policy="object_token", record=str(results / boot_home(preset) / "bootstrap"
                                                                / f"seed{seed}.json"))


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
             max_steps: int | None, outcomes: bool = False) -> dict[str, Any]:
    """Success (%) of `policy` per family and split on `scenes` (the pool runs them in lockstep batches
    where the policy allows: `EpisodePool.run`); with `outcomes`, also each episode's under `SCENES`:
    `{split: {family: "0110…"}}`, one character per scene in the order given (`scene_outcomes` reads it)."""
    from coda_policy.awr import SeededPolicy
    from sim.pool import EpisodeJob

    factory = SeededPolicy(str(policy), seed)
    results = pool.run([EpisodeJob(scene=s.load(), policy=factory, max_steps=max_steps) for s in scenes])
    acc: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for s, r in zip(scenes, results, strict=True):
        if r.error is not None:
            raise RuntimeError(f"evaluation episode on {s.path} failed: {r.error}")
        acc[s.family][s.split].append(r.success)
    rates: dict[str, Any] = {f: {k: 100.0 * sum(v) / len(v) for k, v in splits.items()}
                             for f, splits in acc.items()}
    if outcomes:
        rates[SCENES] = {split: {f: "".join("1" if ok else "0" for ok in acc[f][split])
                                 for f in acc if split in acc[f]}
                         for split in dict.fromkeys(s.split for s in scenes)}
    return rates


def scene_outcomes(record: dict[str, Any], split: str) -> dict[str, bool]:
    """A record's episode outcomes on `split` by scene path (relative to its suite's folder), from the
    `scenes` it carries (`evaluate(..., outcomes=True)`: the suite's first `per_split` scenes per family in
    order); {} for a record written without them."""
    bits = (record.get("scenes") or {}).get(split)
    if not bits:
        return {}
    scenes = frozen.suite(list(bits), splits=(split,), per_split=record.get("per_split"),
                          set_name=record.get("suite", frozen.DEFAULT_SET))
    out = {}
    for family, flags in bits.items():
        these = [s for s in scenes if s.family == family]
        if len(these) != len(flags):
            raise ValueError(f"{family}/{split}: {len(flags)} outcomes for {len(these)} suite scenes")
        out |= {s.path: c == "1" for s, c in zip(these, flags, strict=True)}
    return out


def first_per_split(scenes: Sequence[frozen.SuiteScene], n: int | None) -> list[frozen.SuiteScene]:
    """The first `n` scenes of each (family, split) in `scenes`, in order (all with None)."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    out = []
    for s in scenes:
        seen[(s.family, s.split)] += 1
        if n is None or seen[(s.family, s.split)] <= n:
            out.append(s)
    return out


def evaluate_cell(cfg: RunConfig, run: Path, preset: TablePreset, pool: EpisodePool,
                  shared: Path | None = None) -> dict[str, Any]:
    """The cell's final policy on every split, each round's on the curve split; cached in the run dir and,
    by the policy file's hash, in `shared` (the bootstrap policy every SFT-started cell of a seed shares is
    evaluated once)."""
    cache = run / "suite_eval.json"
    done = json.loads(cache.read_text()) if cache.exists() else {}
    scenes = frozen.suite(cfg.families, per_split=preset.per_split, set_name=preset.suite)
    for r in range(cfg.rounds + 1):
        key = f"round_{r:02d}"
        if key in done and (r < cfg.rounds or SCENES in done[key]):  # (evaluated before outcomes were kept)
            continue
        policy = run / "policy" / f"{key}.safetensors"
        split = frozen.SPLITS if r == cfg.rounds else (preset.curve_split,)
        n = preset.per_split if r == cfg.rounds or preset.curve_per_split is None else preset.curve_per_split
        last = r == cfg.rounds  # the final policy's episodes are kept one by one (`scene_outcomes`)
        what = {"policy": sha256(policy), "seed": cfg.seed, "splits": list(split),
                "families": list(cfg.families), "per_split": n, "max_steps": cfg.rollout_max_steps,
                **({} if preset.suite == frozen.DEFAULT_SET else {"suite": preset.suite}),
                **({"outcomes": True} if last else {})}
        hit = shared / f"{hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:20]}.json" \
            if shared is not None else None
        if hit is not None and hit.exists():
            done[key] = json.loads(hit.read_text())
        else:
            these = first_per_split([s for s in scenes if s.split in split], n)
            done[key] = evaluate(policy, these, cfg.seed, pool, cfg.rollout_max_steps, outcomes=last)
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
    boot_sha = sha256(boot / "policy" / "round_00.safetensors")
    path.write_text(json.dumps({"seed": seed, "bootstrap_sha256": boot_sha, "suite": preset.suite,
                                "per_split": preset.per_split, **splits, "scenes": evals.get(SCENES), **took,
                                "code_commit": provenance("")["commit"]}, indent=1) + "\n")
    return path


def pending_cell(preset: TablePreset, method: str, seed: int, critic: str, workers: int, out: Path,
                 results: Path, log: Any) -> tuple[RunConfig, Path, Path] | None:
    """(config, run directory, record path) of a cell still to run; None (and a log line) when recorded."""
    cfg = cell_config(preset, method, seed, critic, workers)
    row = row_name(cfg)
    record = results / preset.table / f"{row}_seed{seed}.json"
    if record.exists():
        log(f"{row} seed {seed}: recorded, skipped")
        return None
    run = out / f"{row}_seed{seed}"
    if preset.extends is not None and not run.exists():
        from experiments.table.fork import extended_cell

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
           "suite": preset.suite, "per_split": preset.per_split,
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
        commit_files([record, *table_files(results, preset.table)],
                     f"{preset.table} {preset_name}: {cfg.method} seed {cfg.seed} (avg OOD {ood:.1f} %)")
