"""The exact power calculation of the verification test: probabilities sum to one, power grows with n for
a real contrast, batches that fail every episode are inconclusive (FINDINGS.md #1: they used to read as
refuted), and a true null is validated at most about α of the time."""

from __future__ import annotations

import pytest

from experiments.table.power import verdict_rates


@pytest.mark.parametrize(("pt", "pc"), [(0.9, 0.1), (0.7, 0.4), (0.5, 0.5)])
def test_verdicts_are_a_distribution(pt, pc):
    assert sum(verdict_rates(pt, pc, 6, 0.1).values()) == pytest.approx(1.0)


def test_power_grows_with_batch_size():
    power = [verdict_rates(0.8, 0.3, n, 0.1)["validated"] for n in (3, 6, 12, 24)]
    assert power == sorted(power) and power[-1] > 0.95 > power[1]


def test_saturated_batches_are_inconclusive():
    assert verdict_rates(1.0, 1.0, 6, 0.1)["inconclusive"] == pytest.approx(1.0)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_a_true_null_is_rarely_validated_and_often_refuted_at_n12(p):
    r = verdict_rates(p, p, 12, 0.1)
    assert r["validated"] <= 0.1 and r["refuted"] > r["validated"]
