"""The exact statistics of two failure rates: Fisher's one-sided test against scipy, the Agresti–Caffo
bound's coverage."""

from __future__ import annotations

from math import comb

import pytest
from scipy.stats import fisher_exact

from common.stats import fisher_greater, upper_bound


@pytest.mark.parametrize(("a", "n1", "c", "n2"), [(8, 10, 2, 10), (0, 5, 0, 5), (5, 5, 0, 5), (3, 12, 7, 12),
                                                  (10, 20, 10, 20), (1, 1, 0, 3), (17, 30, 6, 25)])
def test_fisher_matches_scipy(a, n1, c, n2):
    want = fisher_exact([[a, n1 - a], [c, n2 - c]], alternative="greater").pvalue
    assert fisher_greater(a, n1, c, n2) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_fisher_refuses_an_impossible_table():
    with pytest.raises(ValueError, match="bad table"):
        fisher_greater(4, 3, 0, 3)


def test_upper_bound_covers_the_true_difference_at_its_level():
    """The Agresti–Caffo bound's one-sided coverage, exactly over binomial outcomes, is near 1 − α."""

    def pmf(k, n, p):
        return comb(n, k) * p**k * (1 - p) ** (n - k)

    n, alpha = 12, 0.1
    for pt, pc in ((0.5, 0.2), (0.3, 0.3), (0.8, 0.5)):
        cover = sum(pmf(a, n, pt) * pmf(c, n, pc) for a in range(n + 1) for c in range(n + 1)
                    if upper_bound(a, n, c, n, alpha) >= pt - pc)
        assert 0.85 <= cover <= 0.99, (pt, pc, cover)
