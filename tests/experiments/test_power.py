"""The exact power calculation of the verification test: probabilities sum to one, power grows with n for
a real contrast, and batches that fail every episode are labelled refuted (the flaw FINDINGS.md records)."""

from __future__ import annotations

import pytest

from experiments.power import verdict_rates


@pytest.mark.parametrize(("pt", "pc"), [(0.9, 0.1), (0.7, 0.4), (0.5, 0.5)])
def test_verdicts_are_a_distribution(pt, pc):
    assert sum(verdict_rates(pt, pc, 6, 0.1).values()) == pytest.approx(1.0)


def test_power_grows_with_batch_size():
    power = [verdict_rates(0.8, 0.3, n, 0.1)["validated"] for n in (3, 6, 12, 24)]
    assert power == sorted(power) and power[-1] > 0.95 > power[1]


def test_saturated_batches_are_called_refuted():
    assert verdict_rates(1.0, 1.0, 6, 0.1)["refuted"] == pytest.approx(1.0)
