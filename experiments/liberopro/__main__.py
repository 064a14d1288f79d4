"""`python -m experiments.liberopro`: the protocol's evaluation (`experiments.liberopro.evaluate`) from the
command line — its tasks listed (`--list`), or a policy evaluated on a suite under a perturbation."""

from __future__ import annotations

import sys
from pathlib import Path

from common.cli import command_parser, worker_count
from experiments.liberopro import evaluate as _evaluate
from experiments.liberopro.evaluate import (
    EPISODES,
    PERTURB,
    SUITES,
    evaluate_to_file,
    listing,
    suite_name,
    tasks,
)


def print_listing(suite: str, perturb: str, every: bool) -> None:
    """`--list`: the suite's tasks in full, or (`every`) one summary line per suite and perturbation."""
    combos = [(s, p) for s in SUITES for p in PERTURB] if every else [(suite, perturb)]
    for s, p in combos:
        ts = tasks(s, p)
        reworded = sum(t.reworded for t in ts)
        bad = [t.name for t in ts if not t.usable]
        print(f"# {suite_name(s, p)}: {len(ts)} tasks, {sum(t.n_init for t in ts)} init states, "
              f"{reworded} instructions differ from their file names, {len(bad)} unusable")
        if not every:
            print(listing(ts))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.liberopro", _evaluate.__doc__)
    ap.add_argument("--list", action="store_true",
                    help="print each task's BDDL file, instruction and init states, and stop")
    ap.add_argument("--suite", choices=SUITES, default="libero_goal")
    ap.add_argument("--perturb", choices=tuple(PERTURB), default="none")
    ap.add_argument("--all", action="store_true",
                    help="with --list: every suite and perturbation, a summary line each")
    ap.add_argument("--policy", default="expert",
                    help="expert (the scripted expert) or a policy checkpoint (experiments.liberopro.sft)")
    ap.add_argument("--episodes", type=int, default=EPISODES,
                    help=f"episodes per task, init states in order (default {EPISODES}, the protocol's; "
                         "fewer only for a smoke test)")
    ap.add_argument("--tasks", type=int, help="the suite's first N tasks (default all)")
    ap.add_argument("--workers", type=worker_count, default=2, help="processes, one task each at a time")
    ap.add_argument("--seed", type=int, default=0, help="episode i is seeded seed + i")
    ap.add_argument("--first-state", type=int, default=0,
                    help="start at this init state (default 0, the protocol's; a diagnostic)")
    ap.add_argument("--out", type=Path, help="write the evaluation's record here as JSON, and each finished "
                    "task's to OUT's .tasks/ folder as it lands (the same command resumes after a kill)")
    ap.add_argument("--commit", action="store_true", help="git-commit each task's record and the evaluation "
                    "file as they land (needs --out)")
    a = ap.parse_args(argv)
    if a.episodes < 1 or (a.tasks is not None and a.tasks < 1) or a.workers < 0 or a.first_state < 0:
        ap.error("--episodes and --tasks must be >= 1, --workers and --first-state >= 0")
    if a.policy != "expert" and not Path(a.policy).is_file():
        ap.error(f"--policy {a.policy}: give 'expert' or a saved policy file "
                 "(python -m experiments.liberopro.sft trains one)")
    if a.commit and a.out is None:
        ap.error("--commit commits the files where --out puts them: name it")
    if a.list:
        print_listing(a.suite, a.perturb, a.all)
        return 0
    try:
        evaluate_to_file(a.suite, a.perturb, a.policy, a.episodes, a.out, n_tasks=a.tasks, workers=a.workers,
                         seed=a.seed, first_state=a.first_state, commit=a.commit,
                         log=lambda line: print(line, flush=True))
    except ValueError as e:  # a task's record from other settings: refused, not mixed in
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
