"""What the round's other episodes of the family say about each factor of a failed episode: those whose
value is like the failing scene's against the rest (`Contrast`), the only evidence of the critic that
compares episodes (`agents.critic.rules` multiplies a factor by its gap; the LLM critic reads the telling
ones in `FailureSummary.text()`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from agents.critic.factors import FactorReading
from common.stats import fisher_greater

# "a value like this one": a number within this share of the factor's in-distribution range of the failing
# scene's value (a choice: the same value)
LIKE_SHARE = 0.25


class Contrast(BaseModel):
    """How one factor separates failures from successes among the round's other episodes of the family:
    those whose value is like the failing scene's (within `LIKE_SHARE` of the ID range for a number, the
    same value for a choice) against the rest."""

    model_config = ConfigDict(frozen=True)

    name: str
    near: int
    near_failed: int
    far: int
    far_failed: int
    p_value: float  # one-sided Fisher exact: episodes like this one fail more often

    @property
    def gap(self) -> float:
        """Failure rate near minus elsewhere (0 when either side is empty)."""
        if not self.near or not self.far:
            return 0.0
        return self.near_failed / self.near - self.far_failed / self.far


def _like(r: FactorReading, v: Any) -> bool | None:
    """Whether peer value `v` is like the failing scene's value of `r` (None: not comparable)."""
    if r.type == "choice" or r.lo is None or r.hi is None:
        return v == r.value
    try:
        return abs(float(v) - float(r.value)) <= LIKE_SHARE * max(r.hi - r.lo, 1e-9)
    except (TypeError, ValueError):
        return None


def contrasts(readings: Sequence[FactorReading],
              peers: Sequence[tuple[dict[str, Any], bool]]) -> dict[str, Contrast]:
    """A `Contrast` per live factor of `readings` that has peers on both sides, from `peers`: the (flat
    factor values, success) of the round's other episodes of the same family."""
    out: dict[str, Contrast] = {}
    for r in readings:
        if not r.live:
            continue
        near = far = near_failed = far_failed = 0
        for values, success in peers:
            if r.name not in values or (like := _like(r, values[r.name])) is None:
                continue
            near += like
            far += not like
            near_failed += like and not success
            far_failed += (not like) and not success
        if near and far:
            out[r.name] = Contrast(name=r.name, near=near, near_failed=near_failed, far=far,
                                   far_failed=far_failed,
                                   p_value=fisher_greater(near_failed, near, far_failed, far))
    return out
