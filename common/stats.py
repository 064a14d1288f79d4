"""Exact small-sample statistics of two failure rates, shared by the critic (the round's peers:
`agents.critic.contrast`) and verification (targeted vs control batches: `agents.critic.verify.decide`).

Standard library only: counts in a verification batch are small (6 to 24 episodes), where exact tests
and a bound with good coverage at 0/n and n/n matter more than speed.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def fisher_greater(a: int, n1: int, c: int, n2: int) -> float:
    """One-sided Fisher exact p-value for H1: rate a/n1 > rate c/n2 — P(X ≥ a) for X hypergeometric with
    the table's margins."""
    if not (0 <= a <= n1 and 0 <= c <= n2):
        raise ValueError(f"bad table: {a}/{n1} vs {c}/{n2}")
    k, total = a + c, n1 + n2
    if total == 0:
        return 1.0
    denom = math.comb(total, n1)
    tail = sum(math.comb(k, x) * math.comb(total - k, n1 - x) for x in range(a, min(k, n1) + 1))
    return min(1.0, tail / denom)


def upper_bound(a: int, n1: int, c: int, n2: int, alpha: float) -> float:
    """One-sided (1 − α) upper confidence bound of the difference of rates a/n1 − c/n2, Agresti–Caffo
    (one success and one failure added to each group: good coverage at small n, defined at 0/n and n/n)."""
    p1, p2 = (a + 1) / (n1 + 2), (c + 1) / (n2 + 2)
    se = math.sqrt(p1 * (1 - p1) / (n1 + 2) + p2 * (1 - p2) / (n2 + 2))
    return p1 - p2 + NormalDist().inv_cdf(1 - alpha) * se
