"""Advantage-weighted updates: weights bounded and monotone, the update follows the weights, the critic
fits on a table of shaped chunks, and the frozen-actor wrapper picks the chunk with the highest Q."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coda_policy.advantages import (
    advantage_groups,
    build_table,
    critic_inputs,
    crossfit_advantages,
    episode_folds,
    fit_table_critic,
    normalise,
)
from coda_policy.awr import (
    AWRConfig,
    QSelectPolicy,
    advantage_weights,
    awr_weights,
    imitated,
    lr_factor,
    weighted_update,
)
from coda_policy.critic import ChunkCriticConfig
from coda_policy.object_token.configuration_object_token import ObjectTokenConfig
from coda_policy.registry import make_policy
from coda_policy.sft import warmup_cosine
from coda_policy.shaping import ShapingConfig, shape_episodes
from programs.seeds import seed_library
from sim.episode import make_observation
from tests.coda_policy.test_shaping import synthetic_episode

torch.set_num_threads(1)
TINY = ObjectTokenConfig(d_model=32, n_layers=1, n_decoder_layers=1, n_heads=2, batch_size=32, flow_steps=4)


@pytest.mark.parametrize("tau,w_max", [(0.1, 5.0), (1.0, 20.0), (3.0, 2.0)])
def test_weights_bounded_and_monotone(tau: float, w_max: float) -> None:
    adv = torch.sort(torch.cat([torch.randn(500) * 5, torch.tensor([-1e9, -50.0, 0.0, 50.0, 1e9])])).values
    w = awr_weights(adv, tau, w_max)
    assert torch.isfinite(w).all() and (w >= 0).all() and (w <= w_max).all()
    assert (torch.diff(w) >= 0).all()
    small = torch.exp(adv / tau) < w_max
    torch.testing.assert_close(w[small], torch.exp(adv[small] / tau))
    assert w[-1] == w_max


def test_normalise() -> None:
    a = normalise(torch.randn(1000) * 7 + 3)
    assert abs(float(a.mean())) < 1e-5 and float(a.std(unbiased=False)) == pytest.approx(1.0, abs=1e-4)
    assert torch.all(normalise(torch.full((5,), 2.0)) == 0)


def _table(episodes):
    chunks = shape_episodes(episodes, ShapingConfig(gamma=0.9), seed_library()["pick_place"][1], h=TINY.chunk,
                            demo_stride=4)
    policy = make_policy(TINY)
    return policy, build_table(episodes, chunks, policy)


@pytest.mark.parametrize("favour", [1.0, -1.0])
def test_weighted_update_follows_the_weights(favour: float) -> None:
    """One state, two behaviours (all-positive and all-negative chunks); the weights pick one."""
    policy, table = _table([synthetic_episode(16, None)])
    n = 64
    inputs = {k: v[:1].expand(n, *v.shape[1:]).clone() for k, v in table.inputs.items()}
    sign = torch.where(torch.arange(n) % 2 == 0, 1.0, -1.0)
    inputs["actions"] = 0.6 * sign[:, None, None] * torch.ones(n, TINY.chunk, 7)
    table = type(table)(table.chunks, inputs, inputs)
    object.__setattr__(table.chunks, "demo", np.zeros(n, bool))
    weights = awr_weights(normalise(favour * sign), 0.2, 20.0)
    m = weighted_update(policy, table, weights, AWRConfig(steps=80, batch_size=32, lr=5e-3))
    assert np.isfinite(m["flow_mse_last"])  # unweighted: the down-weighted half is no longer fitted
    probe = {k: v[:16] for k, v in inputs.items() if k != "actions"}
    acts = policy.sample_actions(probe, generator=torch.Generator().manual_seed(0))
    assert favour * float(acts.mean()) > 0.3


def test_schedule_is_sfts_warmup_cosine() -> None:
    cos = AWRConfig(steps=100, schedule="cosine", warmup=10)
    got = [lr_factor(s, cos) for s in range(100)]
    assert got == [warmup_cosine(s, 10, 100) for s in range(100)]
    assert got[0] == pytest.approx(0.1) and got[9] == pytest.approx(1.0) and got[-1] < 0.01
    assert all(lr_factor(s, AWRConfig(steps=100)) == 1.0 for s in range(100))
    with pytest.raises(ValueError, match="schedule must be one of"):
        AWRConfig(schedule="linear")
    with pytest.raises(ValueError, match="warmup"):
        AWRConfig(steps=10, schedule="cosine", warmup=11)


def _trained(weights: torch.Tensor, cfg: AWRConfig) -> list[torch.Tensor]:
    torch.manual_seed(0)
    policy, table = _table([synthetic_episode(16, None), synthetic_episode(16, 12, policy="expert")])
    weighted_update(policy, table, weights, cfg)
    return [p.detach().clone() for p in policy.parameters()]


def test_self_normalised_weights_keep_the_step_size() -> None:
    """Self-normalised, only the weights' ratios within a minibatch matter: w and 4·w train identically (a
    power of two, so the scaling is exact in floating point), and a constant weight exactly as SFT's
    unweighted loss."""
    _, table = _table([synthetic_episode(16, None), synthetic_episode(16, 12, policy="expert")])
    n = len(table)
    cfg = AWRConfig(steps=5, batch_size=16, lr=1e-3, self_normalize=True, schedule="cosine", warmup=1)
    w = torch.rand(n, generator=torch.Generator().manual_seed(1)) + 0.1
    for a, b in zip(_trained(w, cfg), _trained(4.0 * w, cfg), strict=True):
        torch.testing.assert_close(a, b)
    for a, b in zip(_trained(torch.ones(n), cfg), _trained(torch.full((n,), 4.0), cfg), strict=True):
        torch.testing.assert_close(a, b)
    assert any(not torch.allclose(a, b) for a, b in zip(_trained(torch.ones(n), cfg), _trained(w, cfg),
                                                        strict=True))


def test_failed_rollouts_are_not_imitated_with_rollouts_success() -> None:
    _, table = _table([synthetic_episode(16, None), synthetic_episode(16, 12), synthetic_episode(16, 12,
                                                                                                policy="expert")])
    c = table.chunks
    demo, roll = imitated(c, AWRConfig())
    assert set(demo.tolist()) == set(np.nonzero(c.demo)[0])
    assert set(roll.tolist()) == set(np.nonzero(~c.demo)[0])
    demo_s, roll_s = imitated(c, AWRConfig(rollouts="success"))
    assert set(demo_s.tolist()) == set(demo.tolist())
    assert set(roll_s.tolist()) == set(np.nonzero(~c.demo & c.success)[0]) and 0 < len(roll_s) < len(roll)
    with pytest.raises(ValueError, match="rollouts must be one of"):
        AWRConfig(rollouts="failed")


def test_critic_on_shaped_table_and_weights() -> None:
    eps = [synthetic_episode(24, 17), synthetic_episode(24, None), synthetic_episode(24, 20, policy="expert"),
           synthetic_episode(24, None)]
    policy, table = _table(eps)
    assert len(table) == len(table.chunks) and table.inputs["actions"].shape == (len(table), TINY.chunk, 7)
    data = critic_inputs(policy, table)
    assert data.feats.shape == (len(table), TINY.d_model) and data.next_feats.shape == data.feats.shape
    with_phi = critic_inputs(policy, table, potential_feature=True)
    assert with_phi.feats.shape == (len(table), TINY.d_model + 1)
    np.testing.assert_allclose(with_phi.feats[:, -1].numpy(), table.chunks.beta_phi_start, rtol=1e-5)
    cfg_c = ChunkCriticConfig(hidden=32, steps=100, batch_size=16)
    critic, metrics = fit_table_critic(data, cfg_c)
    assert np.isfinite(metrics["td_mse"]) and "val_td_mse" not in metrics
    adv, cm = crossfit_advantages(data, table.chunks.episode, cfg_c, folds=2)
    assert adv.shape == (len(table),) and cm["folds"] == 2 and np.isfinite(cm["val_td_mse"])
    w, stats = advantage_weights(adv, AWRConfig(tau=0.5, w_max=4.0))
    assert w.shape == (len(table),) and (w >= 0).all() and (w <= 4.0).all() and stats["w_max"] <= 4.0
    assert 0.0 < stats["w_ess"] <= 1.0
    _, flat = advantage_weights(torch.zeros(len(table)), AWRConfig())
    assert flat["w_ess"] == pytest.approx(1.0)
    groups = advantage_groups(adv, table.chunks)
    assert set(groups) == {"adv_demo", "adv_rollout_success", "adv_rollout_failure"}


def test_episode_folds_split_episodes() -> None:
    episode = np.repeat(np.arange(7), 3)
    folds = episode_folds(episode, 3, seed=0)
    assert sorted(torch.cat(folds).tolist()) == list(range(21))
    owners = [set(episode[f.numpy()]) for f in folds]
    assert all(not (a & b) for i, a in enumerate(owners) for b in owners[i + 1:])


class _SumCritic:
    """Q = sum of the normalised chunk: the best sample is the one with the largest actions."""

    def eval(self):
        return self

    def q(self, feats, actions):
        return actions.sum(dim=(1, 2))


def test_qselect_picks_highest_q() -> None:
    ep = synthetic_episode(8, None)
    policy = make_policy(TINY)
    sel = QSelectPolicy(policy, _SumCritic(), k=6, seed=1)
    act = sel.bind(ep.scene)(make_observation(ep.scene, ep.states[0], 0))
    assert act.shape == (TINY.execute, 7)
    sel.reset(ep.scene)
    from coda_policy.object_token.features import collate, featurize

    best, q = sel.choose(collate([featurize(ep.states[0], ep.scene.instruction, ep.scene, policy.embedder)]))
    assert float(best.sum()) == pytest.approx(float(q.max()), rel=1e-5)
    np.testing.assert_allclose(act, best[: TINY.execute].numpy(), atol=1e-6)
