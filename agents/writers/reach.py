"""Is a written stage ever reached? A stage the LLM adds has `done = (<next>) or (<condition>)`, so a
condition that never holds agrees with the demonstrations exactly as well as the program without it and
shapes nothing. When `programs.potential.stage_reached` finds it reached on too few of the expert's
demonstrations, `repair` moves the condition's thresholds to the expert's quartiles on the way to the next
stage (`approach_windows`), keeping what the model chose to read, and `feedback` says what the expert's
read-outs were there, for the model to write another condition."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from programs.expr import ExprError, compile_expr, parse
from programs.model import TrainingProgram
from programs.potential import PotentialCache, episode_parts, stage_reached

# one clause of a condition: `<read-out> <op> <number>` (the shape the one-stage grammar writes)
MOVED = "thresholds moved to the expert's quartiles on the way"  # in a repaired stage's doc
DROPPED = "clauses dropped"  # in a repaired stage's doc, with the clauses
DROP = 10.0  # the change a dropped clause counts as: more than moving any threshold
_COMPARISON = re.compile(r"^(?P<lhs>.+?)\s*(?P<op><=|>=|<|>)\s*(?P<num>-?[0-9]+(?:\.[0-9]+)?)$")


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def _unwrap(clause: str) -> str:
    """`clause` without brackets around all of it (never a call's closing bracket)."""
    clause = clause.strip()
    while clause.startswith("(") and clause.endswith(")") and _balanced(clause[1:-1]):
        clause = clause[1:-1].strip()
    return clause


def _clauses(condition: str) -> list[str]:
    """The `and`-joined clauses of a condition (a clause that is not one on its own fails to parse later)."""
    return [_unwrap(c) for c in _unwrap(condition).split(" and ")]


Windows = list[tuple[Sequence[Any], Any]]  # per episode: (its states on the way, its scene)


def chained(next_done: str, condition: str) -> str:
    """A written stage's `done`: true once the next stage is done too, so the completed prefix never shrinks
    (the seeds' cumulative style)."""
    return f"({next_done}) or ({condition})"


def approach_windows(tp: TrainingProgram, k: int, episodes: Sequence[Any]) -> Windows:
    """Per episode, its states from when subgoal `k - 1` first holds (the start for k = 0, or when it never
    does) to before subgoal `k + 1` first holds (the end if it never does), and its scene: where stage `k`
    has to be reached (`programs.potential.stage_reached`)."""
    cache, out = PotentialCache(tp), []
    for ep in episodes:
        states, _, scene = episode_parts(ep)
        done = cache.for_scene(scene).done_matrix(states)
        nxt = done[:, k + 1]
        end = max(int(np.argmax(nxt)) if nxt.any() else len(states), 1)
        prev = done[:end, k - 1] if k > 0 else np.zeros(0, bool)
        start = int(np.argmax(prev)) if prev.any() else 0
        out.append((states[start:end], scene))
    return out


def _values(tp: TrainingProgram, text: str, expect: str, windows: Windows) -> list[float] | None:
    """`text` evaluated on every state of the approach windows; None when it cannot be on its own."""
    try:
        checked = parse(text, expect=expect, roles=tp.roles)
        out: list[float] = []
        for states, scene in windows:
            f = compile_expr(checked, tp.bind_roles(scene.goal if scene is not None else None))
            out += [float(f(s)) for s in states]
        return out
    except (ExprError, TypeError, ValueError, KeyError):
        return None


def _clause_note(tp: TrainingProgram, clause: str, windows: Windows) -> str | None:
    """What `clause`'s read-out did over the approach windows: its range for a comparison, the share of
    states on which it held for a predicate; None when it cannot be evaluated on its own."""
    m = _COMPARISON.match(clause)
    text = m["lhs"] if m else clause
    values = _values(tp, text, "num" if m else "bool", windows)
    if not values:
        return None
    if m:
        return f"`{text}` went from {min(values):.3f} to {max(values):.3f}"
    return f"`{text}` held on {100 * sum(values) / len(values):.0f} % of those states"


def _always(op: str, threshold: float, values: list[float]) -> bool:
    """A comparison that holds on every state of the way: a clause that no longer tells anything apart."""
    v = np.asarray(values)
    held = {"<": v < threshold, "<=": v <= threshold, ">": v > threshold, ">=": v >= threshold}[op]
    return bool(held.all())


def _with_condition(tp: TrainingProgram, k: int, condition: str, doc: str) -> TrainingProgram:
    subs = list(tp.subgoals)
    nxt = subs[k + 1].done
    subs[k] = subs[k].model_copy(update={"done": chained(nxt, condition), "doc": doc})
    return TrainingProgram.model_validate({**tp.model_dump(exclude={"id"}), "subgoals": subs})


def repair(tp: TrainingProgram, k: int, condition: str, episodes: Sequence[Any], need: float,
           windows: Windows) -> TrainingProgram | None:
    """The written stage `k` with its comparisons' thresholds moved to the expert's quartiles on the way to
    the next stage, so that it is reached on at least `need` of `episodes`: the model's read-outs and
    progress are kept, only numbers change — as few clauses as will do, each as little as will do, and
    never to a threshold every state of the way meets (a clause that would tell nothing apart). Where no
    thresholds do, predicate clauses are dropped, as few as will do, the most selective rest first, never
    leaving one that holds on every state of the way (make demo's insert stage: `not grasped(piece)` and
    the piece above the base never held together before the insert, each did alone).
    None when nothing does (or a clause cannot be read). `windows`: `approach_windows`."""
    clauses = _clauses(condition)
    options: list[list[tuple[float, str | None]]] = []  # per clause: (change, clause text or None: dropped)
    for c in clauses:
        m = _COMPARISON.match(c)
        if m is None:
            if _values(tp, c, "bool", windows) is None:
                return None
            options.append([(0.0, c)] + ([(DROP, None)] if len(clauses) > 1 else []))
            continue
        values = _values(tp, m["lhs"], "num", windows)
        if not values:
            return None
        old = float(m["num"])
        # a hair inside the quartile, so that a strict comparison holds where the read-out sits at it
        nudge = 0.01 * (max(values) - min(values)) * (1 if m["op"].startswith("<") else -1)
        quartiles = [float(q) + nudge for q in np.quantile(values, (0.25, 0.5, 0.75))]
        options.append([(0.0, c)] + [(abs(q - old) / max(abs(old), 1e-3), f"{m['lhs']} {m['op']} {q:.3g}")
                                     for q in quartiles if not _always(m["op"], float(f"{q:.3g}"), values)])
    shares: dict[tuple[str, ...], float] = {}  # evaluated once per kept set (the sort and the loop ask)

    def held(combo: tuple[tuple[float, str | None], ...]) -> float:
        """The share of the way's states on which a condition with dropped clauses holds (the most
        selective is tried first; 1 when it holds everywhere or cannot be read)."""
        kept = tuple(text for _, text in combo if text is not None)
        if len(kept) == len(combo):
            return 0.0
        if kept not in shares:
            values = _values(tp, " and ".join(kept), "bool", windows) if kept else None
            shares[kept] = sum(values) / len(values) if values else 1.0
        return shares[kept]

    combos = sorted(itertools.product(*options),
                    key=lambda cs: (sum(t is None for _, t in cs), sum(x > 0 for x, _ in cs),
                                    sum(x for x, _ in cs), held(cs)))
    for combo in combos[1:]:  # the first is the answer as written
        kept = [text for _, text in combo if text is not None]
        if held(combo) >= 1.0:
            continue  # nothing left, or what is left holds on every state of the way: it tells nothing apart
        dropped = [c for c, (_, text) in zip(clauses, combo, strict=True) if text is None]
        what = ([MOVED] if any(x > 0 for x, t in combo if t is not None) else []) + (
            [f"{DROPPED}: {', '.join(dropped)}"] if dropped else [])
        cand = _with_condition(tp, k, " and ".join(kept),
                               f"{tp.subgoals[k].doc}; {'; '.join(what)} (written: {condition})")
        if stage_reached(cand, episodes, k) >= need:
            return cand
    return None


def feedback(tp: TrainingProgram, k: int, condition: str, share: float, episodes: int, need: float,
             windows: Windows) -> str:
    """What the writer of stage `k` (with `condition`, reached on `share` of `episodes` demonstrations) is
    told: too rarely reached, and each read-out's range on the way (`windows`: `approach_windows`)."""
    notes = list(dict.fromkeys(n for c in _clauses(condition) if (n := _clause_note(tp, c, windows))))
    name, nxt = tp.subgoals[k].name, tp.subgoals[k + 1].name
    lines = [f"the new stage `{name}` is reached before `{nxt}` on {round(share * episodes)} of "
             f"{episodes} expert demonstrations (at least {need:.0%} needed), so it shapes nothing: its "
             f"condition `{condition}` almost never holds on the way to `{nxt}`."]
    if notes:  # one line each: the feedback's lines are clipped one by one
        lines += [f"On the expert's way to `{nxt}` (every state before it first holds):",
                  *(f"- {n}" for n in notes)]
    lines.append("Write a condition the expert meets part-way through that phase, with thresholds inside "
                 "those ranges.")
    return "\n".join(lines)


__all__ = ["DROPPED", "MOVED", "approach_windows", "chained", "feedback", "repair"]
