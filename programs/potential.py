"""Text2potential (DESIGN §4): a `TrainingProgram` becomes a staged potential Φ over `WorldState`, and
its agreement with expert demonstrations is measured.

Φ(s) = m if the verifier (the last `done`) holds. Otherwise k* is the completed prefix of the other
subgoals — the number of leading `done`s that hold, stopping at the first that does not; for a
`latched` program, the position of the last `done` that holds (a later stage implies the earlier ones) — and
Φ(s) = k* + clip(φ_{k*+1}(s), 0, 1 − 1e-6), with a non-finite φ counted as 0. Hence Φ ∈ [0, m],
Φ = m iff the verifier holds (without it k* ≤ m − 1 and the progress term stays below 1), and making
any subgoal done never lowers k*. The verifier decides on its own, so a program whose earlier
subgoals are not cumulative (e.g. `grasped` after the object was released on the goal) still scores
success exactly; such programs show up instead as low agreement, which `programs.refine` repairs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from programs.expr import Checked, Evaluator, ExprError, Memo, compile_expr, parse
from programs.model import Subgoal, TrainingProgram
from sim.scene import SceneSpec
from sim.world import WorldState

PROGRESS_CAP = 1.0 - 1e-6  # φ is clipped to [0, PROGRESS_CAP] so that Φ < k* + 1
TIE_TOL = 1e-9  # Φ(s_{t+h}) ≥ Φ(s_t) − TIE_TOL agrees with time order


class PotentialError(RuntimeError):
    """An expression failed on a state (e.g. it names an entity the scene does not have)."""


CheckedSubgoals = tuple[tuple[Checked, Checked], ...]


@functools.lru_cache(maxsize=512)
def check_subgoals(subgoals: tuple[Subgoal, ...], roles: frozenset[str]) -> CheckedSubgoals:
    """Parse and check every `done`/`progress` once (cached per program content)."""
    out = []
    for i, g in enumerate(subgoals):
        where = f"subgoal {i + 1} {g.name!r}"
        out.append((parse(g.done, expect="bool", roles=roles, where=f"{where} .done"),
                    parse(g.progress, expect="num", roles=roles, where=f"{where} .progress")))
    return tuple(out)


class Potential:
    """Φ for one program under one role binding. Call it on a state, or `.batch` a list of states."""

    def __init__(self, program: TrainingProgram, bindings: dict[str, Any]) -> None:
        self.program, self.bindings = program, bindings
        checked = check_subgoals(program.subgoals, frozenset(program.roles))
        self.names = tuple(g.name for g in program.subgoals)
        self._memo = memo = Memo()  # one state's predicate values, shared by all expressions
        self.done: tuple[Evaluator, ...] = tuple(compile_expr(d, bindings, memo) for d, _ in checked)
        self.progress: tuple[Evaluator, ...] = tuple(compile_expr(p, bindings, memo) for _, p in checked)
        self.m = len(self.done)
        self._verifier, self._prefix = self.done[-1], self.done[:-1]
        self._latched = program.latched

    def _k(self, s: WorldState) -> int:
        """k* below the verifier: the leading done subgoals, or (latched) the last done one."""
        if self._latched:
            for k in range(len(self._prefix), 0, -1):
                if self._prefix[k - 1](s):
                    return k
            return 0
        k = 0
        for d in self._prefix:
            if not d(s):
                break
            k += 1
        return k

    def stage(self, s: WorldState) -> int:
        """k*: m if the verifier holds, else the number of leading done subgoals (latched: the position of
        the last done one)."""
        self._memo.clear()
        if self._verifier(s):
            return self.m
        return self._k(s)

    def __call__(self, s: WorldState) -> float:
        self._memo.clear()
        try:
            if self._verifier(s):
                return float(self.m)
            k = self._k(s)
            p = self.progress[k](s)
        except Exception as e:  # noqa: BLE001 — re-raised with the subgoal that failed
            raise self._explain(s, e) from e
        if not p > 0.0:  # also catches nan
            return float(k)
        return k + (PROGRESS_CAP if p > PROGRESS_CAP else float(p))

    def batch(self, states: Sequence[WorldState]) -> np.ndarray:
        """Φ of each state, as a float array."""
        return np.fromiter((self(s) for s in states), float, count=len(states))

    def done_matrix(self, states: Sequence[WorldState]) -> np.ndarray:
        """(T, m) bool: every raw `done` on every state (no prefix logic); evidence for refinement."""
        rows = []
        for s in states:
            self._memo.clear()
            try:
                rows.append([bool(d(s)) for d in self.done])
            except Exception as e:  # noqa: BLE001 — re-raised with the subgoal that failed, as __call__ does
                raise self._explain(s, e) from e
        return np.array(rows, bool).reshape(len(states), self.m)

    def _explain(self, s: WorldState, e: Exception) -> PotentialError:
        self._memo.clear()
        for i, g in enumerate(self.program.subgoals):
            for kind, fns in (("done", self.done), ("progress", self.progress)):
                try:
                    fns[i](s)
                except Exception as inner:  # noqa: BLE001
                    return PotentialError(f"subgoal {i + 1} {g.name!r} .{kind} `{getattr(g, kind)}` failed: "
                                          f"{type(inner).__name__}: {inner}")
        return PotentialError(f"potential failed: {type(e).__name__}: {e}")


def compile_potential(tp: TrainingProgram, scene: SceneSpec | None = None) -> Potential:
    """Check the program's expressions (raises `ExprError`) and bind its roles (from `scene`'s goal
    where a role refers to it)."""
    return Potential(tp, tp.bind_roles(scene.goal if scene is not None else None))


# ---- agreement with demonstrations ------------------------------------------------------------------
@dataclass(frozen=True)
class AgreementReport:
    """How well Φ orders expert demonstrations in time (chunk endpoints h control steps apart)."""

    agreement: float  # share of pairs with Φ(s_{t+h}) ≥ Φ(s_t) − TIE_TOL; ties agree
    pairs: int
    ties: int  # pairs with equal Φ (counted as agreeing)
    per_episode: tuple[float, ...]
    drops: dict[str, int]  # disagreeing pairs by the subgoal that was current at s_t
    h: int

    def summary(self) -> str:
        worst = ", ".join(f"{k}: {v}" for k, v in sorted(self.drops.items(), key=lambda kv: -kv[1]))
        return (f"agreement {self.agreement:.3f} over {self.pairs} chunk pairs (h={self.h}, {self.ties} ties)"
                + (f"; Φ fell while in: {worst}" if worst else ""))


def episode_parts(ep: Any) -> tuple[Sequence[WorldState], np.ndarray, SceneSpec | None]:
    """(states, control step of each, scene) of a `sim.episode.Episode` or a plain list of states."""
    if hasattr(ep, "states"):
        states = ep.states
        steps = np.asarray(getattr(ep, "state_steps", np.arange(len(states))))
        return states, steps, getattr(ep, "scene", None)
    return list(ep), np.arange(len(ep)), None


def chunk_pairs(steps: np.ndarray, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j): j is the first recorded state at least h steps after state i."""
    j = np.searchsorted(steps, steps + h, side="left")
    ok = j < len(steps)
    return np.nonzero(ok)[0], j[ok]


class PotentialCache:
    """Compiles a program once per distinct role binding (scenes of a family share most of them)."""

    def __init__(self, tp: TrainingProgram) -> None:
        self.tp, self._by_key, self._needs = tp, {}, tp.needs_scene()

    def for_scene(self, scene: SceneSpec | None) -> Potential:
        key = tuple(scene.goal) if (self._needs and scene is not None) else None
        if key not in self._by_key:
            self._by_key[key] = compile_potential(self.tp, scene if self._needs else None)
        return self._by_key[key]


def potential_values(potential: Potential | TrainingProgram, episodes: Sequence[Any]) -> list[np.ndarray]:
    """Φ along each episode; a program is compiled per scene."""
    cache = PotentialCache(potential) if isinstance(potential, TrainingProgram) else None
    out = []
    for ep in episodes:
        states, _, scene = episode_parts(ep)
        pot = cache.for_scene(scene) if cache else potential
        out.append(pot.batch(states))
    return out


def agreement_report(potential: Potential | TrainingProgram, episodes: Sequence[Any],
                     h: int | None = None) -> AgreementReport:
    """Agreement of Φ with time order over every chunk-endpoint pair (s_t, s_{t+h}) of each episode."""
    prog = potential if isinstance(potential, TrainingProgram) else potential.program
    h = h or prog.chunk
    names = [g.name for g in prog.subgoals]
    values = potential_values(potential, episodes)
    agree = ties = total = 0
    per_ep, drops = [], {}
    for ep, phi in zip(episodes, values, strict=True):
        _, steps, _ = episode_parts(ep)
        i, j = chunk_pairs(steps, h)
        diff = phi[j] - phi[i]
        ok = diff >= -TIE_TOL
        agree += int(ok.sum())
        ties += int((np.abs(diff) <= TIE_TOL).sum())
        total += len(i)
        per_ep.append(float(ok.mean()) if len(i) else 1.0)
        for k in np.floor(phi[i[~ok]]).astype(int):
            name = names[min(k, len(names) - 1)]
            drops[name] = drops.get(name, 0) + 1
    return AgreementReport(agree / total if total else 1.0, total, ties, tuple(per_ep), drops, h)


def agreement(potential: Potential | TrainingProgram, episodes: Sequence[Any], h: int | None = None) -> float:
    """Share of expert chunk pairs whose Φ order matches time order (ties count as agreeing)."""
    return agreement_report(potential, episodes, h).agreement


def stage_reached(tp: TrainingProgram, episodes: Sequence[Any], k: int) -> float:
    """The share of `episodes` on which subgoal `k`'s raw `done` holds on a state where subgoal `k - 1`'s
    does (for k > 0) and subgoal `k + 1`'s does not: the stage is reached in its place, after the one before
    it and before the next (where the potential counts it: a stage done before its predecessor adds
    nothing). A stage whose `done` is chained to the next one's (`(<next>) or (<condition>)`, as written
    stages are) agrees with the demonstrations as well as the program without it even when its condition
    never holds; this tells the two apart."""
    if not 0 <= k < len(tp.subgoals) - 1:
        raise ValueError(f"subgoal {k} has no next stage in a program of {len(tp.subgoals)}")
    if not episodes:
        return 0.0
    cache, reached = PotentialCache(tp), 0
    for ep in episodes:
        states, _, scene = episode_parts(ep)
        done = cache.for_scene(scene).done_matrix(states)
        after = done[:, k - 1] if k > 0 else True
        reached += bool((done[:, k] & after & ~done[:, k + 1]).any())
    return reached / len(episodes)


__all__ = ["PROGRESS_CAP", "AgreementReport", "ExprError", "Potential", "PotentialError", "agreement",
           "agreement_report", "compile_potential", "potential_values", "stage_reached"]
