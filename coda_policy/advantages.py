"""The critic's side of the advantage-weighted update (`coda_policy.awr`): the table of policy inputs at
every chunk's two ends, the chunk critic's inputs, Â = Q(s, A) − V(s) cross-fitted over episodes, and
Â's normalisation and means by chunk source.

Â is cross-fitted by default (`AWRConfig.folds`): the chunks are split by episode and each chunk's Â comes
from a critic fitted on the other folds, because a critic fitted on a few hundred transitions memorises
them (V(s) copies Q(s, A_data)) and in-sample Â then shrinks toward noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from coda_policy.critic import ChunkCritic, ChunkCriticConfig, CriticData, fit_critic
from coda_policy.device import module_device, resolve_device, to_device
from coda_policy.shaping import ChunkBatch
from sim.episode import Episode


def normalise(adv: Tensor, eps: float = 1e-8) -> Tensor:
    """Zero mean, unit std over the given set (a constant set maps to zeros)."""
    return (adv - adv.mean()) / (adv.std(unbiased=False) + eps)


# ---- inputs of every chunk -------------------------------------------------------------------------
@dataclass(frozen=True)
class ChunkTable:
    """Policy inputs at every chunk's start and end state, beside the shaped chunks themselves."""

    chunks: ChunkBatch
    inputs: dict[str, Tensor]  # collated features at s_t, plus "actions" (N, h, 7) raw
    next_inputs: dict[str, Tensor]  # collated features at s_{t+n}

    def __len__(self) -> int:
        return len(self.chunks)


def build_table(episodes: Sequence[Episode], chunks: ChunkBatch, policy: Any) -> ChunkTable:
    """The policy's inputs at each chunk's two ends (`policy.state_inputs`: the backend's own features)."""
    starts = [(int(e), int(i)) for e, i in zip(chunks.episode, chunks.start, strict=True)]
    ends = [(int(e), int(i)) for e, i in zip(chunks.episode, chunks.end, strict=True)]
    inputs = policy.state_inputs(episodes, starts)
    inputs["actions"] = torch.as_tensor(chunks.actions, dtype=torch.float32)
    return ChunkTable(chunks, inputs, policy.state_inputs(episodes, ends))


def take_rows(batch: dict[str, Tensor], idx: Tensor, keys: Sequence[str]) -> dict[str, Tensor]:
    """Rows `idx` of the batch's `keys`."""
    return {k: batch[k][idx] for k in keys}


@torch.no_grad()
def pooled_features(policy: Any, inputs: dict[str, Tensor], batch_size: int = 512) -> Tensor:
    """The encoder's pooled features (N, d), detached, with the policy in eval mode."""
    was = policy.training
    policy.eval()
    keys, dev = policy.input_keys, module_device(policy)
    n = len(inputs[keys[0]])
    rows = [take_rows(inputs, torch.arange(i, min(i + batch_size, n)), keys) for i in range(0, n, batch_size)]
    out = [policy.encode(to_device(r, dev))[2].cpu() for r in rows]
    policy.train(was)
    return torch.cat(out).detach()


def norm_actions(policy: Any, actions: Tensor) -> Tensor:
    """Actions in the policy's normalised space (what the critic sees)."""
    with torch.no_grad():
        return policy.normalize_actions(actions.to(module_device(policy))).cpu()


def critic_inputs(policy: Any, table: ChunkTable, potential_feature: bool = False) -> CriticData:
    """Pooled features at both ends (plus βΦ there when `potential_feature`), normalised chunks and the
    shaped targets of every chunk."""
    c = table.chunks
    f32 = lambda x: torch.as_tensor(x, dtype=torch.float32)  # noqa: E731
    feats, nxt = pooled_features(policy, table.inputs), pooled_features(policy, table.next_inputs)
    if potential_feature:
        feats = torch.cat([feats, f32(c.beta_phi_start)[:, None]], dim=1)
        nxt = torch.cat([nxt, f32(c.beta_phi_end)[:, None]], dim=1)
    return CriticData(feats, norm_actions(policy, table.inputs["actions"]), nxt, f32(c.ret), f32(c.discount),
                      f32(c.bootstrap))


def fit_table_critic(data: CriticData, cfg: ChunkCriticConfig, train: Tensor | None = None,
                     val: Tensor | None = None, device: str = "cpu") -> tuple[ChunkCritic, dict[str, float]]:
    """A fresh critic fitted on rows `train` (default all) of `data`, on `device`; metrics on `val` too.
    The critic is returned on `device`."""
    dev = resolve_device(device)
    critic = ChunkCritic(data.feats.shape[1], data.actions.shape[1], data.actions.shape[2], cfg).to(dev)
    critic.reset_target()  # the target copy is a plain attribute, which `.to` does not move
    fit = (data if train is None else data.subset(train)).to(dev)
    metrics = fit_critic(critic, fit, val=None if val is None else data.subset(val).to(dev))
    return critic, metrics


def episode_folds(episode: np.ndarray, k: int, seed: int) -> list[Tensor]:
    """Chunk indices of k folds that split the episodes (never one episode across two folds)."""
    eps = np.random.default_rng(seed).permutation(np.unique(episode))
    return [torch.as_tensor(np.nonzero(np.isin(episode, part))[0]) for part in np.array_split(eps, k)]


@torch.no_grad()
def advantages(critic: ChunkCritic, data: CriticData) -> Tensor:
    """Â = Q(s, A) − V(s) (the minimum over twin Q heads), on the CPU."""
    data = data.to(module_device(critic))
    return (critic.q(data.feats, data.actions) - critic.v(data.feats)).cpu()


def crossfit_advantages(data: CriticData, episode: np.ndarray, cfg: ChunkCriticConfig,
                        folds: int, device: str = "cpu") -> tuple[Tensor, dict[str, float]]:
    """Â of every chunk. With folds > 1 each chunk's Â comes from a critic that never saw its episode:
    on a few hundred transitions a critic memorises, V(s) copies Q(s, A_data) and in-sample Â shrinks to
    noise. Metrics are fold means ("val_*" on the held-out fold)."""
    if folds <= 1 or len(np.unique(episode)) < 2:
        critic, metrics = fit_table_critic(data, cfg, device=device)
        return advantages(critic, data), metrics
    adv = torch.zeros(len(data))
    runs = []
    parts = episode_folds(episode, min(folds, len(np.unique(episode))), cfg.seed)
    for f, held in enumerate(parts):
        train = torch.cat([p for g, p in enumerate(parts) if g != f])
        critic, m = fit_table_critic(data, dataclasses.replace(cfg, seed=cfg.seed + f), train, held, device)
        adv[held] = advantages(critic, data.subset(held))
        runs.append(m)
    return adv, {k: float(np.mean([m[k] for m in runs])) for k in runs[0]} | {"folds": len(parts)}


def advantage_groups(adv: Tensor, chunks: ChunkBatch) -> dict[str, float]:
    """Mean normalised Â of demonstration chunks and of rollout chunks from successful / failed episodes:
    a critic that learned anything ranks them demo ≳ success > failure."""
    a = normalise(adv).numpy()
    demo, success = as_mask(chunks.demo), as_mask(chunks.success)
    groups = {"demo": demo, "rollout_success": ~demo & success, "rollout_failure": ~demo & ~success}
    return {f"adv_{k}": float(a[m].mean()) if m.any() else float("nan") for k, m in groups.items()}


def as_mask(values: Any) -> np.ndarray:
    """A boolean mask, refusing anything else: `~` of an integer array is no complement (~1 = -2), and
    indexing with it picks rows by number."""
    arr = np.asarray(values)
    if arr.dtype != bool:
        raise TypeError(f"expected a boolean mask, got dtype {arr.dtype}")
    return arr
