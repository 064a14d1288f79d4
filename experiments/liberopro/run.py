"""A loop run's policies under the LIBERO-Pro protocol: each round's policy of `python -m agents.run --preset
libero` (round 0: SFT on the seed demonstrations; round k: after k CoDA rounds) evaluated on the suite's
own tasks and under its position, instruction and task perturbations — `docs/results/liberopro.md`'s rows
for a policy the graph trained.

    python -m experiments.liberopro.run --run runs/libero_s31 --episodes 5 --workers 2   # → runs/results/
    python -m experiments.liberopro.run --run runs/libero_s31 --out docs/results/libero/loop --commit
    python -m experiments.liberopro.table      # the table, with one row per evaluated round

One file per (round, perturbation), `<out>/<run>/round<k>_<perturb>.json` (the committed ones under
`docs/results/libero/loop/`; the
`experiments.liberopro --out` format plus the run, its round and the commit that evaluated it), written as
each evaluation finishes; one that exists is kept, so a killed evaluation resumes where it stopped, and
`--commit` commits each file as it lands. The run's config, metrics and verdicts are copied beside them
first (`run_config.json`, `run_metrics.jsonl`, `run_verdicts.json`). The loop never reads these suites:
its held-out scenes are its own family's; the protocol's suites are evaluated here only.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count
from experiments.table.record import RUNS_RESULTS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = RUNS_RESULTS / "libero" / "loop"  # the committed files: --out docs/results/libero/loop
PERTURBS = ("none", "position", "instruction", "task")


def round_policies(run: Path) -> dict[int, Path]:
    """round → its policy file (`policy/round_<k>.safetensors`) of a loop run directory."""
    found = {int(p.stem.split("_")[1]): p for p in sorted((run / "policy").glob("round_*.safetensors"))}
    if not found:
        raise FileNotFoundError(f"{run}: no policy/round_*.safetensors — is it a run directory of "
                                "`agents.run`?")
    return found


def run_suite(run: Path) -> str:
    """The LIBERO suite a loop run trained on (its families' `SceneSpec.libero` suite)."""
    cfg = json.loads((run / "config.json").read_text())
    from sim.families import get_family

    suites = set()
    for family in cfg["families"]:
        fam = get_family(family)
        if fam.world != "libero":
            raise ValueError(f"{run}: family {family!r} is not a LIBERO family; the protocol needs one")
        suites.add(fam.builder.SUITE)
    if len(suites) != 1:
        raise ValueError(f"{run}: families on several suites {sorted(suites)}; give --suite")
    return suites.pop()


def check_rounds(run: Path, policies: dict[int, Path], rounds: list[int]) -> None:
    missing = [r for r in rounds if r not in policies]
    if missing:
        raise FileNotFoundError(f"{run}: no policy for round(s) {missing} (has {sorted(policies)})")


def evaluate_run(run: Path, suite: str, rounds: list[int], perturbs: list[str], episodes: int, workers: int,
                 out: Path, commit: bool, log: Any = print) -> list[Path]:
    """Every (round, perturbation) file not yet written; returns the files written now."""
    from experiments.liberopro.evaluate import evaluate, suite_name, summary
    from experiments.table.record import commit_files, provenance

    policies = round_policies(run)
    check_rounds(run, policies, rounds)
    written = []
    for r in rounds:
        for p in perturbs:
            path = out / run.name / f"round{r}_{p}.json"
            if path.is_file():
                log(f"# {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: kept")
                continue
            t0 = time.perf_counter()
            results = evaluate(suite, p, str(policies[r]), episodes, None, workers, log=log)
            total = summary(results)
            record = {"suite": suite_name(suite, p), "policy": str(policies[r]), "run": run.name, "round": r,
                      "evaluated_at": provenance("")["commit"], "episodes_per_task": episodes, "seed": 0,
                      "first_state": 0, **total, "wall_s": round(time.perf_counter() - t0, 1),
                      "tasks_run": [asdict(x) for x in results]}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1) + "\n")
            log(f"# {run.name} round {r} · {suite_name(suite, p)}: {total['successes']}/{total['episodes']} "
                f"({total['success_rate']} %) · {record['wall_s']:.0f} s → {path}")
            if commit:
                commit_files([path], f"LIBERO-Pro protocol: {run.name} round {r}, {p}: "
                                     f"{total['successes']}/{total['episodes']}")
            written.append(path)
    return written


def record_run(run: Path, out: Path) -> list[Path]:
    """The run's own record beside its evaluations, so the table reads it from the repository: its config
    (`run_config.json`), its per-round metrics (`run_metrics.jsonl`, the loop's wall clock) and each
    diagnosis's verdict (`run_verdicts.json`). Rewritten each time: a resumed run's record grows."""
    folder = out / run.name
    folder.mkdir(parents=True, exist_ok=True)
    written = [Path(shutil.copyfile(run / "config.json", folder / "run_config.json"))]
    if (run / "metrics.jsonl").is_file():
        written.append(Path(shutil.copyfile(run / "metrics.jsonl", folder / "run_metrics.jsonl")))
    verdicts = []
    for path in sorted((run / "diagnoses").glob("round_*/*.json")):
        rec = json.loads(path.read_text())
        if "diagnosis" not in rec:
            continue
        v = rec.get("verdict") or {}
        verdicts.append({"round": int(path.parent.name.split("_")[1]), "episode": Path(rec["episode"]).stem,
                         "factor": rec["diagnosis"]["factor"], "phase": rec["diagnosis"]["phase"],
                         "status": v.get("status", "unverified"),
                         **{k: v[k] for k in ("targeted_failure_rate", "control_failure_rate", "n")
                            if k in v}})
    written.append(folder / "run_verdicts.json")
    written[-1].write_text(json.dumps(verdicts, indent=1) + "\n")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.liberopro.run", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--suite", help="the LIBERO suite (default: the one the run's family names)")
    ap.add_argument("--rounds", help="comma-separated rounds (default: every round with a policy)")
    ap.add_argument("--perturb", default=",".join(PERTURBS),
                    help=f"comma-separated perturbations (default {','.join(PERTURBS)})")
    ap.add_argument("--episodes", type=int, default=5, help="episodes per task, init states 0.. in order")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--out", type=Path, help="where the files go (default runs/results/libero/loop; the "
                    "committed ones: docs/results/libero/loop)")
    ap.add_argument("--commit", action="store_true", help="git-commit each file as it lands (needs --out)")
    a = ap.parse_args(argv)
    if a.commit and a.out is None:
        ap.error("--commit commits the files where --out puts them: name it "
                 "(e.g. --out docs/results/libero/loop)")
    a.out = a.out or RESULTS
    if not (a.run / "config.json").is_file():
        ap.error(f"--run {a.run}: not a run directory (no config.json); `python -m agents.run --preset "
                 "libero --out DIR` makes one")
    perturbs = [p.strip() for p in a.perturb.split(",") if p.strip()]
    bad = [p for p in perturbs if p not in PERTURBS]
    if bad or not perturbs:
        ap.error(f"--perturb {a.perturb}: choose from {', '.join(PERTURBS)}")
    if a.episodes < 1 or a.workers < 1:
        ap.error("--episodes and --workers must be >= 1")
    try:
        policies = round_policies(a.run)
        rounds = sorted(policies) if a.rounds is None else [int(r) for r in a.rounds.split(",") if r.strip()]
        suite = a.suite or run_suite(a.run)
        check_rounds(a.run, policies, rounds)  # before anything is written
        recorded = record_run(a.run, a.out)
        if a.commit:
            from experiments.table.record import commit_files

            commit_files(recorded, f"{a.run.name}: the loop run's config, metrics and verdicts beside its "
                                   "protocol evaluations")
        evaluate_run(a.run, suite, rounds, perturbs, a.episodes, a.workers, a.out, a.commit,
                     log=lambda line: print(line, flush=True))
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
