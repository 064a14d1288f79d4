"""Starts: where a task's movable objects stand when an episode begins, and whether a training start is one
the protocol evaluates from.

The protocol evaluates every task from init states 0–49 of each (perturbed) suite's own file (original,
`_swap`, `_lan`, `_task`, `_object`): those 250 rows per task are every start an evaluation uses. Training
starts are LIBERO's own samples (`LiberoEnv.reset(seed=...)` without an init state: each object placed in
its BDDL region from the seed) — the standalone SFT's demonstrations (`experiments.liberopro.sft`) and the
loop's LIBERO families alike. Two starts are the same when every movable object they share stands within
`TOLERANCE` of its place in the other, compared as placed, before the episode's settling steps.

LIBERO's regions are small: on `libero_object` a sampled start's nearest evaluation start differs by only
3–6 mm in its farthest object (the evaluation's own starts by 2.5 mm and more from each other), so the
tolerance is 1 mm — a state, not a layout: the sampler and the benchmark's files draw from one distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from experiments.liberopro.evaluate import EPISODES, PERTURB, init_states, tasks

TOLERANCE = 1e-3  # m: below the 2.5 mm the closest two of a suite's own init states differ by
EVAL_STATES = EPISODES  # init states per task file the protocol evaluates from (0..49: one an episode)

Positions = dict[str, np.ndarray]


@dataclass(frozen=True)
class EvalStart:
    """One start the protocol evaluates from: its suite file, its row, the objects' positions there."""

    suite: str
    index: int
    positions: Positions


def evaluation_starts(suite: str, task: str, n: int = EVAL_STATES,
                      perturbs: tuple[str, ...] = tuple(PERTURB)) -> list[EvalStart]:
    """Init states 0..n-1 of `task` (by name) in each evaluated file of `suite`'s perturbations that ships
    the task, as positions read in that file's own environment."""
    from sim.libero.env import LiberoEnv

    out = []
    for perturb in perturbs:
        found = [t for t in tasks(suite, perturb) if t.name == task and t.usable]
        if not found:
            continue
        env = LiberoEnv.for_task(found[0])
        try:
            out += [EvalStart(found[0].suite, i, env.positions_at(row))
                    for i, row in enumerate(init_states(found[0])[:n])]
        finally:
            env.close()
    if not out:
        raise ValueError(f"{suite}: no evaluated init-state file holds a task named {task!r}")
    return out


def distance(a: Positions, b: Positions) -> float:
    """The farthest any shared object stands from its place in the other start (inf: none shared)."""
    common = a.keys() & b.keys()
    if not common:
        return float("inf")
    return max(float(np.linalg.norm(np.asarray(a[k]) - np.asarray(b[k]))) for k in common)


def clashes(start: Positions, evals: list[EvalStart], tol: float = TOLERANCE) -> list[tuple[str, int]]:
    """The evaluation starts (suite, row) that `start` equals within `tol`."""
    return [(e.suite, e.index) for e in evals if distance(start, e.positions) <= tol]


def margin(start: Positions, evals: list[EvalStart]) -> float:
    """How far `start` is from its nearest evaluation start (m; the farthest object of that pair)."""
    return min(distance(start, e.positions) for e in evals)
