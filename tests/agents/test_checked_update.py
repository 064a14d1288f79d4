"""The round update's check (`coda_policy.awr.checked_update`, issue #38): an update that raises its own loss
is redone at a tenth of the rate, and after the last redo the policy is left exactly as it was; an update
that lowers it is kept as it ran."""

from __future__ import annotations

import dataclasses

import torch

from coda_policy.awr import AWRConfig, check_rows, checked_update, update_loss, weighted_update
from tests.coda_policy.test_awr import _table
from tests.coda_policy.test_shaping import synthetic_episode

torch.set_num_threads(1)


def _setup():
    torch.manual_seed(0)
    policy, table = _table([synthetic_episode(16, None), synthetic_episode(16, 12, policy="expert")])
    return policy, table, torch.ones(len(table))


def _params(policy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.parameters()]


def test_the_check_loss_is_paired_and_covers_what_the_update_imitates() -> None:
    policy, table, w = _setup()
    demo = torch.as_tensor(table.chunks.demo)
    only_demos = AWRConfig(steps=5, batch_size=16, demo_fraction=1.0, check_chunks=10_000)
    rows = check_rows(table, only_demos)
    assert sorted(rows.tolist()) == torch.nonzero(demo).squeeze(1).tolist()  # every imitated chunk
    assert len(check_rows(table, dataclasses.replace(only_demos, check_chunks=2))) == 2
    mixed = check_rows(table, dataclasses.replace(only_demos, demo_fraction=0.5, check_chunks=4))
    assert len(mixed) == 4 and int(demo[mixed].sum()) == 2 and len(set(mixed.tolist())) == 4
    assert update_loss(policy, table, w, rows, only_demos) == update_loss(policy, table, w, rows, only_demos)


def test_an_update_that_raises_its_loss_is_undone() -> None:
    policy, table, w = _setup()
    start = _params(policy)
    m = checked_update(policy, table, w, AWRConfig(steps=5, batch_size=16, lr=1.0, backtracks=0))
    assert m["lr"] == 0.0 and m["backtracks"] == 1 and m["check_loss"][0] == m["check_loss"][1]
    assert all(torch.equal(a, b) for a, b in zip(start, _params(policy), strict=True))
    # unchecked, the same update does raise it: the check is what undid it
    rows = check_rows(table, AWRConfig(batch_size=16))
    before = update_loss(policy, table, w, rows, AWRConfig(batch_size=16))
    weighted_update(policy, table, w, AWRConfig(steps=5, batch_size=16, lr=1.0))
    assert update_loss(policy, table, w, rows, AWRConfig(batch_size=16)) > before


def test_a_redone_update_runs_at_a_tenth_of_the_rate_and_lowers_the_loss() -> None:
    policy, table, w = _setup()
    m = checked_update(policy, table, w, AWRConfig(steps=5, batch_size=16, lr=1.0, backtracks=4))
    assert 1 <= m["backtracks"] <= 4 and m["lr"] == 1.0 * 0.1 ** m["backtracks"]
    assert m["check_loss"][1] <= m["check_loss"][0]


def test_an_update_that_lowers_its_loss_is_kept_as_it_ran() -> None:
    policy, table, w = _setup()
    cfg = AWRConfig(steps=20, batch_size=16, lr=1e-3)
    m = checked_update(policy, table, w, cfg)
    assert m["backtracks"] == 0 and m["lr"] == 1e-3 and m["check_loss"][1] < m["check_loss"][0]
    plain, *_ = _setup()
    weighted_update(plain, table, w, cfg)
    assert all(torch.equal(a, b) for a, b in zip(_params(plain), _params(policy), strict=True))
