"""Learning-progress ledger and budget allocation (DESIGN §5 steps 1 and 10).

An *arm* is a (difficulty mode, task family) pair; the family's base distribution is the arm
`("seed", family)`. After each round's training the `measure` node records the arm's success rate.
Absolute learning progress is `|Δ success|` between consecutive points of an arm (or against a `before`
measurement taken in the same round), smoothed by an exponential moving average. `allocate` turns the
ledger into next round's scene counts per arm; it is a pure function of the ledger and the config.

The ledger is a small JSON file (`<memory dir>/ledger.json`, written atomically) rather than Chroma
metadata: it is numbers keyed by (mode, family, round), needs no embedding, and a person can read it.
Raw points are stored; ALP is computed on read, so changing α never needs a migration.

An arm's score is its learning progress (`score="lp"`, the paper's), its *learnability* p(1 − p) — p the
arm's latest measured success, largest for arms the policy sometimes solves ("No Regrets", Rutherford et
al., NeurIPS 2024: sampling levels by learnability beats both curricula and domain randomisation) — or
their sum (`"lp+learnability"`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memory.types import ProgressPoint

Arm = tuple[str, str]  # (mode id, family)
Score = Literal["lp", "learnability", "lp+learnability"]
SCORES: tuple[Score, ...] = ("lp", "learnability", "lp+learnability")


@dataclass(frozen=True, kw_only=True)
class AllocationConfig:
    """How learning progress becomes a generation budget."""

    # EMA weight of the newest |Δ success|: alp ← α·|Δ| + (1−α)·alp (higher forgets faster).
    alpha: float = 0.3
    # Share of each family's free budget spread evenly over its arms, whatever their progress.
    epsilon: float = 0.2
    # Weight c of a UCB bonus c·sqrt(ln(1+T)/(1+n)) (T: points of the family's arms, n: this arm's); 0 = off.
    ucb_c: float = 0.0
    # Score of an arm with no ALP yet (fewer than two points): max(unseen_lp, best seen score), so new
    # modes are tried at least as much as the most progressing one.
    unseen_lp: float = 0.25
    # Scenes every arm gets before the rest is shared out (scaled down when the budget is too small).
    min_per_arm: int = 1
    # What ranks an arm: its smoothed learning progress ("lp"), its learnability p(1 − p) on its latest
    # measurement ("learnability"), or their sum ("lp+learnability"); arms not yet measured score
    # `unseen_lp` (at least the best seen score) either way.
    score: Score = "lp"

    def __post_init__(self) -> None:
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, got {self.score!r}")
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")
        if self.ucb_c < 0 or self.unseen_lp < 0 or self.min_per_arm < 0:
            raise ValueError("ucb_c, unseen_lp and min_per_arm must be >= 0")


def smoothed_alp(points: Sequence[ProgressPoint], alpha: float) -> list[float | None]:
    """ALP after each point: None until a |Δ| exists, then the EMA of |Δ| (initialised with the first)."""
    out: list[float | None] = []
    ema: float | None = None
    prev: float | None = None
    for p in points:
        before = p.before if p.before is not None else prev
        if before is not None:
            delta = abs(p.success - before)
            ema = delta if ema is None else alpha * delta + (1 - alpha) * ema
        out.append(ema)
        prev = p.success
    return out


class Ledger:
    """Success history per arm and round, persisted as JSON. `record` upserts by (mode, family, round)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._points: dict[Arm, dict[int, ProgressPoint]] = {}
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        data = json.loads(self.path.read_text())
        for row in data["points"]:
            p = ProgressPoint.model_validate(row)
            self._points.setdefault((p.mode_id, p.family), {})[p.round] = p

    def save(self) -> None:
        if self.path is None:
            return
        rows = [p.model_dump(mode="json", exclude={"alp"}) for arm in sorted(self._points)
                for _, p in sorted(self._points[arm].items())]
        tmp = self.path.with_suffix(".json.tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"version": 1, "points": rows}, indent=1))
        os.replace(tmp, self.path)  # atomic: a crash leaves the old or the new file, never half of one

    def record(self, mode_id: str, family: str, round_no: int, success: float, n: int = 0,
               before: float | None = None) -> ProgressPoint:
        """Store the arm's success rate measured after round `round` (`before`: the same arm measured
        before that round's training, if the measure node took it). Re-recording a round replaces it."""
        p = ProgressPoint(mode_id=mode_id, family=family, round=round_no, success=success, n=n, before=before)
        self._points.setdefault((mode_id, family), {})[round_no] = p
        self.save()
        return p

    def arms(self) -> list[Arm]:
        return sorted(self._points)

    def history(self, mode_id: str, family: str,
                alpha: float = AllocationConfig.alpha) -> list[ProgressPoint]:
        """Points of one arm in round order, each with the smoothed ALP after it."""
        pts = [p for _, p in sorted(self._points.get((mode_id, family), {}).items())]
        return [p.model_copy(update={"alp": a}) for p, a in zip(pts, smoothed_alp(pts, alpha), strict=True)]

    def alp(self, mode_id: str, family: str, alpha: float = AllocationConfig.alpha) -> float | None:
        """Current smoothed ALP of an arm; None while it has no |Δ| yet."""
        h = self.history(mode_id, family, alpha)
        return h[-1].alp if h else None

    def n_points(self, mode_id: str, family: str) -> int:
        return len(self._points.get((mode_id, family), {}))

    def learnability(self, mode_id: str, family: str) -> float | None:
        """p(1 − p) of the arm's latest measured success p; None while it was never measured."""
        pts = self._points.get((mode_id, family))
        if not pts:
            return None
        p = pts[max(pts)].success
        return p * (1.0 - p)


def arm_value(ledger: Ledger, mode_id: str, family: str, cfg: AllocationConfig) -> float | None:
    """The arm's measured score under `cfg.score`; None while the parts it needs are not measured yet."""
    alp = ledger.alp(mode_id, family, cfg.alpha)
    learn = ledger.learnability(mode_id, family)
    if cfg.score == "lp":
        return alp
    if cfg.score == "learnability":
        return learn
    return None if learn is None else learn + (alp if alp is not None else 0.0)


def arm_scores(ledger: Ledger, family: str, modes: Sequence[str], cfg: AllocationConfig) -> dict[str, float]:
    """Score per mode of one family: its measured value under `cfg.score` (smoothed ALP by default;
    optimistic for unmeasured arms) plus the UCB bonus."""
    values = {m: arm_value(ledger, m, family, cfg) for m in modes}
    best_seen = max((a for a in values.values() if a is not None), default=0.0)
    total = sum(ledger.n_points(m, family) for m in modes)
    scores = {}
    for m in modes:
        base = values[m] if values[m] is not None else max(cfg.unseen_lp, best_seen)
        bonus = cfg.ucb_c * math.sqrt(math.log1p(total) / (1 + ledger.n_points(m, family)))
        scores[m] = base + bonus
    return scores


def _split(total: int, weights: Mapping[str, float], order: Sequence[str]) -> dict[str, int]:
    """Integer shares of `total` proportional to `weights`, summing exactly to `total` (largest
    remainder; ties go to earlier names in `order`)."""
    wsum = sum(weights.values())
    quotas = {m: total * weights[m] / wsum if wsum > 0 else total / len(order) for m in order}
    out = {m: math.floor(q + 1e-9) for m, q in quotas.items()}
    left = total - sum(out.values())
    by_rest = sorted(order, key=lambda m: (-(quotas[m] - out[m]), order.index(m)))
    for m in by_rest[:left]:
        out[m] += 1
    return out


def allocate_family(ledger: Ledger, family: str, modes: Sequence[str], budget: int,
                    cfg: AllocationConfig) -> dict[str, int]:
    """Scenes per mode for one family, summing exactly to `budget`."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    modes = sorted(dict.fromkeys(modes))
    if not modes:
        if budget:
            raise ValueError(f"family {family!r} has a budget of {budget} but no arms to spend it on")
        return {}
    scores = arm_scores(ledger, family, modes, cfg)
    order = sorted(modes, key=lambda m: (-scores[m], m))  # best first; ids break ties deterministically
    base = min(cfg.min_per_arm, budget // len(modes))
    free = budget - base * len(modes)
    wsum = sum(scores.values())
    weights = {m: cfg.epsilon / len(modes) + (1 - cfg.epsilon) * (scores[m] / wsum if wsum > 0 else
                                                                   1 / len(modes)) for m in modes}
    share = _split(free, weights, order)
    return {m: base + share[m] for m in modes}


def allocate(ledger: Ledger, arms: Mapping[str, Sequence[str]], budget: int | Mapping[str, int],
             cfg: AllocationConfig = AllocationConfig()) -> dict[Arm, int]:
    """Next round's scenes per (mode, family). `arms`: family → candidate mode ids (include "seed" for the
    base distribution); `budget`: accepted scenes per family (one number for all, or per family). Each
    family's counts sum exactly to its budget — the equal-generation-budget rule of DESIGN §6."""
    out: dict[Arm, int] = {}
    for family in sorted(arms):
        b = budget if isinstance(budget, int) else budget[family]
        for mode, k in allocate_family(ledger, family, arms[family], b, cfg).items():
            out[(mode, family)] = k
    return out
