"""The trainer's weighted update sees the chunk table as `coda_policy` built it: groups shaped by different
training programs are concatenated with episode indices shifted and every mask still a boolean mask (an
integer `demo` column once made `~demo` select every chunk as a "rollout" and scrambled the advantages
reported per group)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.graph.trainer import _concat
from coda_policy.advantages import advantage_groups, as_mask
from coda_policy.shaping import ShapingConfig, shape_episodes
from programs.seeds import seed_library
from tests.coda_policy.test_shaping import synthetic_episode


def _batch(episodes):
    return shape_episodes(episodes, ShapingConfig(gamma=0.9), seed_library()["pick_place"][1], h=8,
                          demo_stride=4)


def test_concatenated_groups_keep_their_masks_and_shift_episodes() -> None:
    a = _batch([synthetic_episode(24, 17, policy="expert"), synthetic_episode(24, None)])
    b = _batch([synthetic_episode(24, 20), synthetic_episode(24, 18, policy="expert")])
    both = _concat([(0, a), (2, b)])
    for name in ("demo", "success", "bootstrap", "terminal"):
        assert getattr(both, name).dtype == bool, name
        joined = np.concatenate([getattr(a, name), getattr(b, name)])
        np.testing.assert_array_equal(getattr(both, name), joined)
    np.testing.assert_array_equal(both.episode, np.concatenate([a.episode, b.episode + 2]))
    assert set(np.unique(both.episode)) == {0, 1, 2, 3}
    assert both.demo.any() and (~both.demo).any()


def test_group_advantages_partition_the_chunks() -> None:
    chunks = _concat([(0, _batch([synthetic_episode(24, 17, policy="expert"), synthetic_episode(24, None),
                                  synthetic_episode(24, 20)]))])
    adv = torch.randn(len(chunks), generator=torch.Generator().manual_seed(0))
    groups = advantage_groups(adv, chunks)
    sizes = {"demo": chunks.demo.sum(), "rollout_success": (~chunks.demo & chunks.success).sum(),
             "rollout_failure": (~chunks.demo & ~chunks.success).sum()}
    assert all(sizes.values())
    # normalised advantages have mean 0 over all chunks, so the group means weighted by size sum to 0
    assert sum(sizes[k] * groups[f"adv_{k}"] for k in sizes) == pytest.approx(0.0, abs=1e-3)


def test_an_integer_mask_is_refused() -> None:
    with pytest.raises(TypeError, match="boolean mask"):
        as_mask(np.array([1, 0, 1]))
