"""`ChunkCritic`: fits a toy regression, bootstraps through a chain exactly, keeps its target by EMA,
and round-trips through save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coda_policy.critic import ChunkCritic, ChunkCriticConfig, critic_data, expectile_loss, fit_critic

torch.set_num_threads(1)


def test_fits_toy_regression() -> None:
    """No bootstrap: Q must learn a smooth function of (state, chunk); V the mean over each state's chunks."""
    rng = np.random.default_rng(0)
    n_states, per_state, d, h = 64, 8, 6, 4
    s = rng.normal(size=(n_states, d)).astype(np.float32)
    feats = np.repeat(s, per_state, 0)
    acts = rng.uniform(-1, 1, (n_states * per_state, h, 2))
    ret = np.sin(feats[:, 0]) + acts[:, :, 0].mean(1) - 0.5 * acts[:, 0, 1] ** 2
    zeros = np.zeros(len(ret))
    data = critic_data(feats, acts, feats, ret, zeros, zeros)
    critic = ChunkCritic(d, h, 2, ChunkCriticConfig(hidden=64, steps=300, batch_size=128, lr=3e-3))
    m = fit_critic(critic, data)
    assert m["explained_var"] > 0.9, m
    v = critic.v(torch.as_tensor(s)).detach().numpy()
    v_true = ret.reshape(n_states, per_state).mean(1)
    assert np.corrcoef(v, v_true)[0, 1] > 0.9


def test_bootstrap_through_a_chain() -> None:
    """s0 → s1 → s2 → success, reward 1 on the last chunk, γ^n = 0.5: Q = 0.25, 0.5, 1. The terminal chunk
    does not bootstrap (its next state's value is garbage on purpose)."""
    feats = np.eye(4, dtype=np.float32)[[0, 1, 2]]
    nxt = np.eye(4, dtype=np.float32)[[1, 2, 3]]
    acts = np.zeros((3, 2, 1))
    ret, boot = np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.0])
    data = critic_data(feats, acts, nxt, ret, np.full(3, 0.5), boot)
    critic = ChunkCritic(4, 2, 1, ChunkCriticConfig(hidden=32, steps=400, batch_size=3, lr=5e-3, ema=0.1))
    fit_critic(critic, data)
    q = critic.q(data.feats, data.actions).detach().numpy()
    np.testing.assert_allclose(q, [0.25, 0.5, 1.0], atol=0.03)


def test_target_is_ema_and_not_a_submodule() -> None:
    critic = ChunkCritic(3, 2, 1, ChunkCriticConfig(hidden=8, twin=True, ema=0.5))
    assert not any(k.startswith("target") for k in critic.state_dict())
    assert len(critic.qs) == 2
    p = next(critic.parameters())
    with torch.no_grad():
        p.add_(1.0)
    p_t = next(critic.target.parameters())
    before = p_t.clone()
    critic.update_target()
    torch.testing.assert_close(p_t, 0.5 * before + 0.5 * p)


def test_twin_min_and_expectile() -> None:
    critic = ChunkCritic(3, 2, 1, ChunkCriticConfig(hidden=8))
    f, a = torch.randn(5, 3), torch.randn(5, 2, 1)
    torch.testing.assert_close(critic.q(f, a), critic.q_all(f, a).min(0).values)
    diff = torch.tensor([1.0, -1.0])
    assert float(expectile_loss(diff, 0.9)) == pytest.approx((0.9 + 0.1) / 2)


def test_save_load_round_trip(tmp_path) -> None:
    critic = ChunkCritic(3, 2, 1, ChunkCriticConfig(hidden=8, twin=False, seed=3))
    f, a = torch.randn(5, 3), torch.randn(5, 2, 1)
    back = ChunkCritic.load(critic.save(tmp_path / "critic.safetensors"))
    torch.testing.assert_close(back.q(f, a), critic.q(f, a))
    torch.testing.assert_close(back.v(f), critic.v(f))
    torch.testing.assert_close(back.target.v(f), critic.v(f))
