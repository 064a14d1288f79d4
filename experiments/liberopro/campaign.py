"""Issue #41's LIBERO runs as one resumable campaign, over as many sittings as it takes: each run made (a
bootstrap, or a fork of another run's round 0), taken to its judged round one round per `agents.run`
invocation (its record committed as each round lands), and evaluated under the protocol at round 0 and at
the judged round. Every step is the command a reader would type, and is skipped when its output exists,
so a killed campaign is rerun from the top and goes on where it stopped.

    python -m experiments.liberopro.campaign --dry-run          # the steps, done and to do
    python -m experiments.liberopro.campaign --commit           # run what is left, committing each record
    python -m experiments.liberopro.campaign --only libero_g1 --commit

A step that fails ends its run's steps (the later ones need it) and the campaign goes on to the next run;
the exit status is 1 when any failed. The plan (`PLAN`) is the one docs/libero.md states: each retraining
run judged at round 5, decided before any of its protocol numbers existed.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.cli import command_parser, run_cli, worker_count
from experiments.liberopro.evaluate import EPISODES
from experiments.liberopro.run import evaluation_file, recorded_rounds

PROTOCOL = EPISODES  # episodes per task, the protocol's
COMMITTED = Path("docs/results/libero/loop")  # the evaluations and run records in the repository
FORK_STEP = 2  # a run's round-0 report in its graph's checkpoints (`agents.replay RUN` lists them)
FORK_SET = ("--set", "budget=128", "--set", "learn.retrain=true", "--set", "learn.retrain_steps=scaled")


@dataclass(frozen=True)
class Run:
    """One loop run: `preset` makes its bootstrap (`agents.run --preset`); `fork` = (origin, method) forks
    the origin's round 0 instead, its rounds run by `method` (a control). Evaluated at round 0 under
    `at_zero` (a fork's round 0 is its origin's: none), at the judged round under `judged_under`, and at
    both under `both`."""

    name: str
    preset: str | None = None
    fork: tuple[str, str] | None = None
    judged: int = 5
    at_zero: tuple[str, ...] = ("position", "none")
    judged_under: tuple[str, ...] = ("position", "none")
    both: tuple[str, ...] = ("instruction", "task")


@dataclass(frozen=True)
class Evaluation:
    """One more evaluation of an existing run's round (e.g. a perturbation added later)."""

    name: str
    round: int
    perturbs: tuple[str, ...]


@dataclass(frozen=True)
class Study:
    """A study of a run (`python -m MODULE --run runs/NAME ARGS --out OUT`), run once its output is
    missing; committed with --commit."""

    name: str  # the run it reads
    module: str
    args: tuple[str, ...]
    out: Path

    def argv(self, runs: Path) -> tuple[str, ...]:
        return (self.module, "--run", str(runs / self.name), *self.args, "--out", str(self.out))


FINDINGS = Path("docs/results/findings")
PLAN: tuple[Run | Evaluation | Study, ...] = (
    Run("libero_sp2", preset="libero_spatial"),
    Study("libero_sp2", "studies.libero_place_trace",
          ("--round", "5", "--perturb", "position", "--episodes", "5"),
          FINDINGS / "libero_place_trace_sp2_r5_position.json"),
    Study("libero_sp2", "studies.libero_layout_audit", (), FINDINGS / "libero_layout_audit_sp2.json"),
    Run("libero_g1", preset="libero_goal"),
    *(Study("libero_g1", "studies.libero_place_trace",
            ("--round", str(k), "--perturb", "position", "--episodes", "5"),
            FINDINGS / f"libero_place_trace_g1_r{k}_position.json") for k in (0, 5)),
    *(Study("libero_g1", "studies.libero_target_probe", ("--round", str(k), "--perturb", "position"),
            FINDINGS / f"libero_target_probe_g1_r{k}_position.json") for k in (0, 5)),
    Study("libero_g1", "studies.libero_layout_audit", (), FINDINGS / "libero_layout_audit_g1.json"),
    Run("libero_spsft", fork=("libero_sp2", "sft"), at_zero=(), both=()),
    Study("libero_spsft", "studies.libero_target_probe", ("--round", "5", "--perturb", "position"),
          FINDINGS / "libero_target_probe_spsft_r5_position.json"),
    # libero_g1's control, as libero_spsft is libero_sp2's (added after g1's round 5 was read: FINDINGS #68)
    Run("libero_gsft", fork=("libero_g1", "sft"), at_zero=(), both=()),
    Evaluation("libero_t1", 0, ("object",)),
    Evaluation("libero_r2", 5, ("object",)),
    Run("libero_uni2", fork=("libero_t1", "uniform"), at_zero=(), both=()),
)


@dataclass(frozen=True)
class Step:
    what: str
    argv: tuple[str, ...]  # after `python -m`
    finished: Callable[[], bool]  # read when asked: another process may finish the step meanwhile
    record: int | None = None  # a loop round: its record committed after it
    output: Path | None = None  # a study's file, committed after it

    @property
    def done(self) -> bool:
        return self.finished()


def steps(item: Run | Evaluation | Study, runs: Path, out: Path, workers: int,
          commit: bool) -> Iterator[Step]:
    """The item's steps in order, each marked done when its output exists."""
    run, folder = runs / item.name, out / item.name

    def evaluate(rounds: tuple[int, ...], perturbs: tuple[str, ...]) -> Step:
        def done() -> bool:
            return all(evaluation_file(folder, r, p, PROTOCOL).is_file() for r in rounds for p in perturbs)

        argv = ("experiments.liberopro.run", "--run", str(run), "--rounds", ",".join(map(str, rounds)),
                "--perturb", ",".join(perturbs), "--workers", str(workers), "--out", str(out),
                *(("--commit",) if commit else ()))
        return Step(f"{item.name}: round(s) {', '.join(map(str, rounds))} under {', '.join(perturbs)}", argv,
                    done)

    if isinstance(item, Evaluation):
        yield evaluate((item.round,), item.perturbs)
        return
    if isinstance(item, Study):
        yield Step(f"{item.name}: {item.module} → {item.out}", item.argv(runs), item.out.is_file,
                   output=item.out)
        return

    def has(r: int) -> Callable[[], bool]:
        return lambda: r in recorded_rounds(run / "metrics.jsonl")

    started, rounds = (run / "config.json").is_file(), recorded_rounds(run / "metrics.jsonl")
    if item.fork is None:
        make = ("--preset", str(item.preset), "--llm", "rules", "--workers", str(workers))
        resume = started and 0 not in rounds  # a bootstrap killed on the way
        yield Step(f"{item.name}: its bootstrap", ("agents.run", *(("--resume",) if resume else make),
                                                   "--rounds", "0", "--out", str(run), "--quiet"),
                   has(0), record=0)
    else:
        origin, method = item.fork
        yield Step(f"{item.name}: {origin}'s round 0 forked, method {method}",
                   ("agents.replay", str(runs / origin), "--fork", str(FORK_STEP), "--out", str(run),
                    "--rounds", "1", "--method", method, *FORK_SET), (run / "config.json").is_file)
    if item.at_zero:
        yield evaluate((0,), item.at_zero)
    for r in range(1, item.judged + 1):
        yield Step(f"{item.name}: round {r}", ("agents.run", "--out", str(run), "--resume", "--rounds",
                                               str(r), "--quiet"), has(r), record=r)
    yield evaluate((item.judged,), item.judged_under)
    if item.both:
        yield evaluate((0, item.judged), item.both)


def wait_free(run: Path) -> None:
    """Wait while another `agents.run` writes the run directory (it holds the directory's flock,
    `agents.run_checks.lock_run`): a step started beside it would be refused, and the campaign would go on
    to the next run while this one is still running."""
    if not run.is_dir():
        return
    fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"# {run}: another agents.run is writing it; waiting for it to end", flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)  # the lock, if taken, goes with it


def record(run: Path, out: Path, rnd: int, commit: bool) -> None:
    """The run's record beside its evaluations after round `rnd`, committed with `commit`."""
    from experiments.liberopro.run import record_run
    from experiments.table.record import commit_files

    written = record_run(run, out)
    if commit:
        commit_files(written, f"{run.name}: its records after round {rnd} "
                              "(experiments.liberopro.campaign)")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.liberopro.campaign", __doc__)
    ap.add_argument("--runs", type=Path, default=Path("runs"), help="where the run directories are (runs/)")
    ap.add_argument("--out", type=Path, default=COMMITTED,
                    help="where the evaluations and records go (default: docs/results/libero/loop)")
    ap.add_argument("--workers", type=worker_count, default=2,
                    help="processes per evaluation and per run (default 2)")
    ap.add_argument("--only", default="", help="these runs of the plan, comma-separated (default: all)")
    ap.add_argument("--commit", action="store_true", help="commit each evaluation and record as it lands")
    ap.add_argument("--dry-run", action="store_true", help="list the steps, done and to do; run nothing")
    a = ap.parse_args(argv)
    if a.workers < 1:
        ap.error("--workers must be >= 1")
    names = [n for n in a.only.split(",") if n]
    known = list(dict.fromkeys(i.name for i in PLAN))
    unknown = sorted(set(names) - set(known))
    if unknown:
        ap.error(f"--only: {', '.join(unknown)} not in the plan ({', '.join(known)})")
    plan = [i for i in PLAN if not names or i.name in names]
    if not a.dry_run:
        os.nice(5)  # the campaign's commands yield to interactive work; they inherit it

    def body() -> int:
        failed = [item.name for item in plan if not run_item(item, a)]
        if failed:
            print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1 if failed else 0

    try:
        return run_cli(body, hint=lambda: "rerun the same command to go on where it stopped")
    except KeyboardInterrupt:  # the running step got it too, and stopped where it resumes
        print("\nstopped; rerun the same command to go on where it stopped", file=sys.stderr)
        return 130


def run_item(item: Run | Evaluation | Study, a: Any) -> bool:
    """The item's steps not done yet, in order; False when one failed (its later steps are not run)."""
    for step in steps(item, a.runs, a.out, a.workers, a.commit):
        if a.dry_run:
            print(f"{'done' if step.done else 'to do'}: {step.what}  (python -m {' '.join(step.argv)})",
                  flush=True)
            continue
        if not step.done:
            wait_free(a.runs / item.name)  # another agents.run may be finishing it
        if step.done:
            print(f"done: {step.what}", flush=True)
            if step.record is not None and step.record not in recorded_rounds(
                    a.out / item.name / "run_metrics.jsonl"):  # a round whose record did not land
                record(a.runs / item.name, a.out, step.record, a.commit)
            continue
        print(f"# {step.what}: python -m {' '.join(step.argv)}", flush=True)
        if subprocess.run([sys.executable, "-m", *step.argv], check=False).returncode != 0:
            print(f"# {step.what}: failed; {item.name}'s later steps are left for the next run",
                  file=sys.stderr, flush=True)
            return False
        if step.record is not None:
            record(a.runs / item.name, a.out, step.record, a.commit)
        if step.output is not None and a.commit:
            from experiments.table.record import commit_files

            commit_files([step.output], f"{step.what} (experiments.liberopro.campaign)")
    return True


if __name__ == "__main__":
    raise SystemExit(main())
