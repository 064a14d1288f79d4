"""Refinement of a training program whose potential disagrees with expert demonstrations (DESIGN §4:
"a training program below the agreement threshold is refined before use").

Without an LLM, `refine` searches a few deterministic repairs and keeps the one that raises agreement
most, repeating while it helps:

- latch: make the stages cumulative — k* becomes the last subgoal whose `done` holds, not the leading
  run of them (`TrainingProgram.latched`: a later stage implies the earlier ones — the usual fault:
  "grasped" turns false once the object is released on the goal); the expressions stay as written;
- reorder: sort the non-verifier subgoals by when they first hold in the demonstrations;
- flip: replace a progress φ by 1 − φ (it ran backwards in its stage);
- drop: remove one non-verifier subgoal.

The result is a new program whose parent is the input, whose `diagnosis` is the input's, and whose
`refinement` says what was changed and the agreement before and after. (An LLM rewriter tried before
the repairs had no caller and was removed; the LLM training writer gets the checks' errors back.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from programs.checks import check_training
from programs.expr import ExprError
from programs.model import Subgoal, TrainingProgram
from programs.potential import PotentialCache, agreement_report, episode_parts


@dataclass(frozen=True)
class Evidence:
    """What a refinement is judged on."""

    episodes: Sequence[Any]  # expert demonstrations: `sim.episode.Episode`s or lists of WorldStates
    threshold: float = 0.9  # agreement that is good enough


Candidate = tuple[str, TrainingProgram]


def _with(tp: TrainingProgram, subgoals: Sequence[Subgoal]) -> TrainingProgram:
    return TrainingProgram.model_validate({**tp.model_dump(exclude={"id"}), "subgoals": list(subgoals)})


def _latch(tp: TrainingProgram) -> list[Candidate]:
    if tp.latched or tp.m < 3:  # with one subgoal before the verifier, latching changes nothing
        return []
    return [("latched the stages (a later stage implies the earlier ones)",
             TrainingProgram.model_validate({**tp.model_dump(exclude={"id"}), "latched": True}))]


def _first_true(tp: TrainingProgram, episodes: Sequence[Any]) -> np.ndarray:
    """Mean over demos of when each raw done first holds (fraction of the episode; 1 if never)."""
    cache, rows = PotentialCache(tp), []
    for ep in episodes:
        states, _, scene = episode_parts(ep)
        d = cache.for_scene(scene).done_matrix(states)
        first = np.where(d.any(0), d.argmax(0), len(states)) / max(len(states), 1)
        rows.append(first)
    return np.mean(rows, 0)


def _reorder(tp: TrainingProgram, episodes: Sequence[Any]) -> list[Candidate]:
    if tp.m < 3 or not episodes:
        return []
    order = np.argsort(_first_true(tp, episodes)[:-1], kind="stable")
    if (order == np.arange(tp.m - 1)).all():
        return []
    gs = [tp.subgoals[i] for i in order] + [tp.subgoals[-1]]
    return [("reordered subgoals by when they first hold in the demos: " + " → ".join(g.name for g in gs),
             _with(tp, gs))]


def _flips(tp: TrainingProgram) -> list[Candidate]:
    out = []
    for k, g in enumerate(tp.subgoals):
        gs = list(tp.subgoals)
        gs[k] = g.model_copy(update={"progress": f"1 - ({g.progress})"})
        out.append((f"reversed the progress of {g.name!r}", _with(tp, gs)))
    return out


def _drops(tp: TrainingProgram) -> list[Candidate]:
    return [(f"dropped subgoal {g.name!r}", _with(tp, tp.subgoals[:k] + tp.subgoals[k + 1:]))
            for k, g in enumerate(tp.subgoals[:-1])]


def candidates(tp: TrainingProgram, episodes: Sequence[Any]) -> list[Candidate]:
    """Every single-step repair of `tp`, most conservative first."""
    return [*_latch(tp), *_reorder(tp, episodes), *_flips(tp), *_drops(tp)]


def _score(tp: TrainingProgram, episodes: Sequence[Any]) -> tuple[float, float] | None:
    """(agreement, −share of ties): ties count as agreeing, so among equals prefer the potential that
    moves (a flat Φ agrees trivially)."""
    if check_training(tp):
        return None
    try:
        r = agreement_report(tp, episodes)
    except (ExprError, ValueError, RuntimeError):
        return None
    return r.agreement, -r.ties / max(r.pairs, 1)


def refine(tp: TrainingProgram, evidence: Evidence, max_steps: int = 4) -> TrainingProgram:
    """`tp` itself if it meets the threshold (or nothing helps), else the best program found: each step
    takes the repair that raises (agreement, −ties) most, while one does, up to `max_steps`."""
    before = agreement_report(tp, evidence.episodes)
    if before.agreement >= evidence.threshold:
        return tp
    best, score, notes = tp, (before.agreement, -before.ties / max(before.pairs, 1)), []
    for _ in range(max_steps):  # keep improving past the threshold while a repair helps
        scored = [(s, note, c) for note, c in candidates(best, evidence.episodes)
                  if (s := _score(c, evidence.episodes)) is not None]
        if not scored:
            break
        s, note, cand = max(scored, key=lambda t: t[0])  # max keeps the first of equals: least drastic
        if s <= score:
            break
        best, score = cand, s
        notes.append(note)
    if best is tp:
        return tp
    text = (f"refined from {tp.hash8} ({'; '.join(notes)}); agreement {before.agreement:.3f} → "
            f"{score[0]:.3f} on {len(evidence.episodes)} demos")
    return TrainingProgram.model_validate({**best.model_dump(exclude={"id"}), "parent_id": tp.id,
                                           "diagnosis": tp.diagnosis, "refinement": text, "round": tp.round,
                                           "mode_id": tp.mode_id})
