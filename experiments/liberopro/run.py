"""A loop run's policies under the LIBERO-Pro protocol: each round's policy of `python -m agents.run --preset
libero` (round 0: SFT on the seed demonstrations; round k: after k CoDA rounds) evaluated on the suite's
own tasks and under its position, instruction and task perturbations — `docs/results/liberopro.md`'s rows
for a policy the graph trained.

    python -m experiments.liberopro.run --run runs/libero_s31 --workers 2   # → runs/results/
    python -m experiments.liberopro.run --run runs/libero_s31 --out docs/results/libero/loop --commit
    python -m experiments.liberopro.table      # the table, with one row per evaluated round

50 episodes per task by default, the protocol's (init states 0–49 of each file); `--episodes 2` is a smoke
test. One file per (round, perturbation), `<out>/<run>/round<k>_<perturb>_<n>ep.json` for n episodes per
task (the committed ones under `docs/results/libero/loop/`; the files named `round<k>_<perturb>.json` there
are the earlier 5-episode evaluations, read as such; the `experiments.liberopro --out` format plus the run
and its round), its tasks' records in `round<k>_<perturb>_<n>ep.tasks/` as each lands: an evaluation whose
file exists is kept, and a killed one resumes at its next task; `--commit` commits each task's record and
each file as they land. The run's config, metrics and verdicts are copied beside them
first (`run_config.json`, `run_metrics.jsonl`, `run_verdicts.json`, and `run_trained.json`: each round's
training scenes counted by factor value). The loop never reads these suites:
its held-out scenes are its own family's; the protocol's suites are evaluated here only.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count
from experiments.table.record import RUNS_RESULTS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = RUNS_RESULTS / "libero" / "loop"  # the committed files: --out docs/results/libero/loop
PERTURBS = ("none", "position", "instruction", "task", "object")  # every one the package ships


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


def evaluation_file(folder: Path, rnd: int, perturb: str, episodes: int) -> Path:
    """Where a round's evaluation under `perturb` at `episodes` per task is written."""
    return folder / f"round{rnd}_{perturb}_{episodes}ep.json"


def finished(folder: Path, rnd: int, perturb: str, episodes: int) -> Path | None:
    """The round's finished evaluation under `perturb` at `episodes` per task, if one exists: this naming's,
    or an earlier file without the episodes in its name (`round<k>_<perturb>.json`: 5 per task) that says
    the same number in its record."""
    path = evaluation_file(folder, rnd, perturb, episodes)
    if path.is_file():
        return path
    old = folder / f"round{rnd}_{perturb}.json"
    if old.is_file() and json.loads(old.read_text())["episodes_per_task"] == episodes:
        return old
    return None


def evaluate_run(run: Path, suite: str, rounds: list[int], perturbs: list[str], episodes: int, workers: int,
                 out: Path, commit: bool, log: Any = print) -> list[Path]:
    """Every (round, perturbation) evaluation not yet finished, each resumed from its tasks' records;
    returns the files written now."""
    from experiments.liberopro import evaluate as protocol

    policies = round_policies(run)
    check_rounds(run, policies, rounds)
    written = []
    for r in rounds:
        for p in perturbs:
            done = finished(out / run.name, r, p, episodes)
            if done is not None:
                log(f"# {done.relative_to(ROOT) if done.is_relative_to(ROOT) else done}: kept")
                continue
            path = evaluation_file(out / run.name, r, p, episodes)
            t0 = time.perf_counter()
            record = protocol.evaluate_to_file(suite, p, str(policies[r]), episodes, path, workers=workers,
                                               commit=commit, log=log, run=run.name, round=r)
            log(f"# {run.name} round {r} · {record['suite']}: {record['successes']}/{record['episodes']} "
                f"({record['success_rate']} %) · {time.perf_counter() - t0:.0f} s → {path}")
            written.append(path)
    return written


def record_run(run: Path, out: Path) -> list[Path]:
    """The run's own record beside its evaluations, so the table reads it from the repository: its config
    (`run_config.json`), its per-round metrics (`run_metrics.jsonl`, the loop's wall clock) and each
    diagnosis's verdict (`run_verdicts.json`). Rewritten each time: a resumed run's record grows. A record
    that holds a round the run directory does not (the directory rebuilt to fewer rounds, e.g. a bootstrap
    reproduced after a machine reset) is kept as it is: nothing is written, and the record is not shrunk."""
    folder = out / run.name
    kept = recorded_rounds(folder / "run_metrics.jsonl") - recorded_rounds(run / "metrics.jsonl")
    if kept:
        print(f"# {folder / 'run_metrics.jsonl'}: kept — it records round(s) {sorted(kept)} that {run} does "
              "not have (a rebuilt or shorter run directory); the run's record is not rewritten", flush=True)
        return []
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
    trained = trained_scenes(run)
    if trained:
        written.append(folder / "run_trained.json")
        written[-1].write_text(json.dumps(trained, indent=1) + "\n")
    return written


def recorded_rounds(metrics: Path) -> set[int]:
    """The rounds a metrics file (a run's `metrics.jsonl`, or its copy beside the evaluations) has a line
    for; none where it is absent."""
    if not metrics.is_file():
        return set()
    return {int(json.loads(line)["round"]) for line in metrics.read_text().splitlines() if line.strip()}


def trained_scenes(run: Path) -> list[dict[str, Any]]:
    """Per round after the bootstrap, the training scenes whose demonstrations went into that round's update
    (each slot's accepted scenes, read from the graph's checkpoint before the round's train node), counted
    by each factor's value: do the generated layouts LIBERO-Pro's position perturbation tests reach the
    update? [] for a run without its trace (nothing to read)."""
    if not (run / "trace.sqlite").is_file():
        return []
    from agents.graph.rundir import RunDir
    from agents.replay import node_states, open_app

    with open_app(RunDir(run)) as app:
        states = node_states(app, "train")
    return [factor_counts(r, s["slots"], run) for r, s in sorted(states.items()) if r > 0]


def factor_counts(round_no: int, slots: Iterable[Mapping[str, Any]], run: Path) -> dict[str, Any]:
    """One round's training scenes (its slots' `accepted` scene files, relative to `run`): how many, and
    per factor how many took each value. A scene file gone from the run directory is counted as missing,
    not guessed at, and does not stop the evaluation this record sits beside."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    n, missing = 0, 0
    for slot in slots:
        for scene in slot["accepted"]:
            n += 1
            if not (run / scene).is_file():
                missing += 1
                continue
            for group in json.loads((run / scene).read_text())["factors"].values():
                for name, value in group.items():
                    counts[name][str(value)] += 1
    out = {"round": round_no, "scenes": n,
           "factors": {k: dict(sorted(c.items())) for k, c in sorted(counts.items())}}
    return {**out, "missing_scene_files": missing} if missing else out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.liberopro.run", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--suite", help="the LIBERO suite (default: the one the run's family names)")
    ap.add_argument("--rounds", help="comma-separated rounds (default: every round with a policy)")
    ap.add_argument("--perturb", default=",".join(PERTURBS),
                    help=f"comma-separated perturbations (default {','.join(PERTURBS)})")
    ap.add_argument("--episodes", type=int, default=50,
                    help="episodes per task, init states 0.. in order (default 50, the protocol's; fewer: "
                         "a smoke test)")
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
        if a.commit and recorded:
            from experiments.table.record import commit_files

            commit_files(recorded, f"{a.run.name}: the loop run's config, metrics and verdicts beside its "
                                   "protocol evaluations")
        evaluate_run(a.run, suite, rounds, perturbs, a.episodes, a.workers, a.out, a.commit,
                     log=lambda line: print(line, flush=True))
    except (FileNotFoundError, ValueError) as e:  # ValueError: a task record from other settings, too
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
