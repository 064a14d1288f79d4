"""Advantage-weighted flow matching (DESIGN §4): the chunk critic scores each (s_t, A_t) of rollouts and
demonstrations (`coda_policy.advantages`: Â = Q(s, A) − V(s), cross-fitted over episodes), Â is normalised
to zero mean and unit std over the data, and the policy's flow-matching loss is weighted per sample by
w = clip(exp(Â/τ), 0, w_max). An update is kept only if it lowered its own loss (`checked_update`).

Also here: `QSelectPolicy` for the `frozen_actor` ablation (no policy update; at each decision the critic
picks the best of K sampled chunks) and picklable policy factories for pool workers. The potential and the
critic are training-time only: a deployed, updated policy uses neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from coda_policy.advantages import (
    ChunkTable,
    advantage_groups,
    as_mask,
    critic_inputs,
    crossfit_advantages,
    normalise,
    take_rows,
)
from coda_policy.critic import ChunkCritic, ChunkCriticConfig
from coda_policy.dataset import batch_keys
from coda_policy.device import check_device_spec, module_device, resolve_device, to_device
from coda_policy.object_token.features import collate, featurize
from coda_policy.sft import warmup_cosine
from coda_policy.shaping import ChunkBatch
from coda_policy.threads import WORKER_THREADS
from sim.episode import Observation

SCHEDULES = ("constant", "cosine")
ROLLOUTS = ("all", "success")


@dataclass(frozen=True, kw_only=True)
class AWRConfig:
    """The weighted policy update."""

    # temperature τ on normalised advantages
    tau: float = 1.0
    # weight ceiling w_max
    w_max: float = 20.0
    # optimiser steps of the weighted update
    steps: int = 300
    # samples per step
    batch_size: int = 128
    # AdamW learning rate, a tenth of SFT's: this fine-tunes a converged policy on a few hundred chunks.
    # `python -m studies.aw_round --mode text2potential` (3 seeds): 3e-4 gave OOD 18.0 → 21.3 % and
    # ID 100 → 68 %; 1e-4 gave OOD 18.0 → 28.7 % and ID 100 → 92 %
    lr: float = 1e-4
    # AdamW weight decay
    weight_decay: float = 1e-4
    # share of every minibatch drawn from demonstration chunks (the rest from rollouts); both weighted
    demo_fraction: float = 0.5
    # gradient-norm clip
    grad_clip: float = 1.0
    # minibatch sampling seed
    seed: int = 0
    # cross-fitting folds for Â (split by episode; 1 = in-sample), see `crossfit_advantages`
    folds: int = 3
    # learning-rate schedule: "constant", or "cosine" (linear warm-up over `warmup` steps, then a cosine to
    # zero: the schedule of a round's SFT fine-tune, `coda_policy.sft.train`)
    schedule: str = "constant"
    # warm-up steps of the cosine schedule
    warmup: int = 0
    # divide each minibatch's weighted loss by its weights' sum instead of its size (Σ w·l / Σ w, lerobot's
    # convention): the weights then shift emphasis between chunks without changing the step size, and with
    # equal weights the update is exactly SFT's loss on the same minibatch
    self_normalize: bool = False
    # which rollout chunks the update imitates: "all", or "success" (chunks of successful rollouts only; the
    # critic still learns from every chunk). With Text2potential the cross-fitted critic ranks failed
    # rollouts' chunks above demonstrations' (mean normalised Â +0.2 to +0.9 against about −0.05 on
    # the development runs, FINDINGS #11), so "all" weights the policy toward its own failures
    rollouts: str = "all"
    # where the critic fits and the update run: cpu, cuda, cuda:N or auto (`coda_policy.device`); the
    # policy is moved there and stays
    device: str = "cpu"
    # the update must lower its own loss on up to this many of the chunks it imitates (the same noise
    # before and after: `update_loss`); 0 skips the check. One that raised it stepped too far: a cold AdamW's
    # first steps move every weight by about lr, and the quickstart's 5 steps at 1e-3 took its pretrained
    # policy from 20 to 3 of 20 held-out in-distribution scenes (loss 0.34 → 0.87 → 1.11 over its first
    # steps; at 1e-4: 20 of 20, issue #38)
    check_chunks: int = 512
    # times an update that raised its loss is redone from the starting weights at a tenth of the rate;
    # after the last, the policy is left as it was
    backtracks: int = 2

    def __post_init__(self) -> None:
        if self.tau <= 0 or self.w_max <= 0:
            raise ValueError(f"tau and w_max must be > 0, got {self.tau}, {self.w_max}")
        if not 0.0 <= self.demo_fraction <= 1.0:
            raise ValueError(f"demo_fraction must be in [0, 1], got {self.demo_fraction}")
        if self.rollouts not in ROLLOUTS:
            raise ValueError(f"rollouts must be one of {', '.join(ROLLOUTS)}, got {self.rollouts!r}")
        if self.rollouts != "all" and self.demo_fraction >= 1.0:
            raise ValueError(f"rollouts={self.rollouts!r} changes nothing with demo_fraction=1 (minibatches "
                             "of demonstrations only)")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.check_chunks < 0 or self.backtracks < 0:
            raise ValueError(f"check_chunks and backtracks must be >= 0, got {self.check_chunks}, "
                             f"{self.backtracks}")
        if not 0 <= self.warmup <= self.steps:
            raise ValueError(f"warmup must be in [0, steps], got {self.warmup} with {self.steps} steps")
        check_device_spec(self.device)


# ---- weights ---------------------------------------------------------------------------------------
def awr_weights(adv_norm: Tensor, tau: float, w_max: float) -> Tensor:
    """w = clip(exp(Â/τ), 0, w_max): non-negative, bounded, non-decreasing in Â."""
    return torch.exp(torch.clamp(adv_norm / tau, max=float(np.log(w_max)) + 1.0)).clamp(0.0, w_max)


def advantage_weights(adv: Tensor, cfg: AWRConfig) -> tuple[Tensor, dict[str, float]]:
    """Weights from normalised advantages, and their statistics."""
    w = awr_weights(normalise(adv), cfg.tau, cfg.w_max)
    return w, {"adv_mean": float(adv.mean()), "adv_std": float(adv.std()), "w_mean": float(w.mean()),
               "w_max": float(w.max()), "w_min": float(w.min()),
               "w_at_cap": float((w >= cfg.w_max - 1e-6).float().mean()),
               # Kish's effective sample size as a share of the chunks: 1 when every weight is equal, near 0
               # when a few chunks carry the update
               "w_ess": float(w.sum() ** 2 / (len(w) * (w ** 2).sum()).clamp_min(1e-12))}


def imitated(chunks: ChunkBatch, cfg: AWRConfig) -> tuple[Tensor, Tensor]:
    """Indices of the chunks the update imitates: demonstration chunks, and rollout chunks (all, or those of
    successful rollouts with `cfg.rollouts` "success")."""
    demo = torch.as_tensor(as_mask(chunks.demo))
    roll = ~demo
    if cfg.rollouts == "success":
        roll &= torch.as_tensor(as_mask(chunks.success))
    return torch.nonzero(demo).squeeze(1), torch.nonzero(roll).squeeze(1)


def _minibatch(gen: torch.Generator, demo: Tensor, roll: Tensor, cfg: AWRConfig) -> Tensor:
    n_demo = round(cfg.batch_size * cfg.demo_fraction) if len(roll) else cfg.batch_size
    n_demo = n_demo if len(demo) else 0
    parts = [demo[torch.randint(len(demo), (n_demo,), generator=gen)]] if n_demo else []
    if cfg.batch_size - n_demo:
        parts.append(roll[torch.randint(len(roll), (cfg.batch_size - n_demo,), generator=gen)])
    return torch.cat(parts)


def lr_factor(step: int, cfg: AWRConfig) -> float:
    """The learning rate at `step` as a share of `cfg.lr`."""
    return 1.0 if cfg.schedule == "constant" else warmup_cosine(step, cfg.warmup, cfg.steps)


def weighted_update(policy: Any, table: ChunkTable, weights: Tensor, cfg: AWRConfig,
                    on_step: Any = None) -> dict[str, float]:
    """`cfg.steps` AdamW steps of `policy.forward(batch, weights=w)` on minibatches mixing demonstration
    and rollout chunks (weights divided by their minibatch mean when `cfg.self_normalize`), at the
    schedule's learning rate; the policy is left in eval mode."""
    demo, roll = imitated(table.chunks, cfg)
    dev = resolve_device(cfg.device)
    policy.to(dev)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, cfg))
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    policy.train()
    keys = batch_keys(policy, table.inputs)
    losses = []
    for step in range(cfg.steps):
        idx = _minibatch(gen, demo, roll, cfg)
        w = weights[idx]
        if cfg.self_normalize:
            w = w / w.mean().clamp_min(1e-8)
        loss, m = policy(to_device(take_rows(table.inputs, idx, keys), dev), weights=w.to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(m["flow_mse"])
        if on_step:
            on_step(step, m)
    policy.eval()
    return {"flow_mse_first": float(np.mean(losses[:20])), "flow_mse_last": float(np.mean(losses[-20:]))}


BACKTRACK = 0.1  # learning-rate factor of each redone update


def check_rows(table: ChunkTable, cfg: AWRConfig) -> Tensor:
    """The chunks an update is checked on: up to `cfg.check_chunks` of those it imitates, demonstrations and
    rollouts in its minibatches' proportions, drawn without replacement with a seed of their own."""
    demo, roll = imitated(table.chunks, cfg)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    share = cfg.demo_fraction if len(roll) else 1.0
    n_demo = min(len(demo), round(cfg.check_chunks * share))
    n_roll = min(len(roll), cfg.check_chunks - n_demo) if share < 1 else 0
    return torch.cat([demo[torch.randperm(len(demo), generator=gen)[:n_demo]],
                      roll[torch.randperm(len(roll), generator=gen)[:n_roll]]])


@torch.no_grad()
def update_loss(policy: Any, table: ChunkTable, weights: Tensor, rows: Tensor, cfg: AWRConfig) -> float:
    """The update's loss on `rows` (their weights over their mean), the policy in eval mode and the noise
    drawn from a fixed seed: two calls differ only by the policy's weights."""
    dev, keys, was = module_device(policy), batch_keys(policy, table.inputs), policy.training
    w = weights[rows] / weights[rows].mean().clamp_min(1e-8)
    policy.eval()
    total = 0.0
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(cfg.seed)
        for i in range(0, len(rows), cfg.batch_size):
            part = slice(i, i + cfg.batch_size)
            batch = to_device(take_rows(table.inputs, rows[part], keys), dev)
            loss, _ = policy(batch, weights=w[part].to(dev))
            total += float(loss) * len(rows[part])
    policy.train(was)
    return total / len(rows)


def checked_update(policy: Any, table: ChunkTable, weights: Tensor, cfg: AWRConfig) -> dict[str, Any]:
    """`weighted_update`, kept only if it lowered its own loss (`update_loss` on `check_rows`); else redone
    from the starting weights at `BACKTRACK` times the rate, at most `cfg.backtracks` times, after which
    the policy is left as it was. Adds the rate kept ("lr", 0 when none was), the redos ("backtracks") and
    the loss before and after ("check_loss")."""
    rows = check_rows(table, cfg) if cfg.check_chunks else torch.zeros(0, dtype=torch.long)
    if not len(rows):
        return weighted_update(policy, table, weights, cfg) | {"lr": cfg.lr, "backtracks": 0}
    policy.to(resolve_device(cfg.device))
    start = {k: v.detach().to("cpu", copy=True) for k, v in policy.state_dict().items()}
    before = update_loss(policy, table, weights, rows, cfg)
    lr = cfg.lr
    for tries in range(cfg.backtracks + 1):
        m = weighted_update(policy, table, weights, dataclasses.replace(cfg, lr=lr))
        after = update_loss(policy, table, weights, rows, cfg)
        if after <= before:
            return m | {"lr": lr, "backtracks": tries, "check_loss": [before, after]}
        policy.load_state_dict(start)
        lr *= BACKTRACK
    return m | {"lr": 0.0, "backtracks": cfg.backtracks + 1, "check_loss": [before, before]}


def advantage_weighted_update(policy: Any, table: ChunkTable, critic_cfg: ChunkCriticConfig,
                              cfg: AWRConfig) -> dict[str, Any]:
    """The policy update — one composition, run by the loop's `train` node (`agents.graph.trainer`) and by
    `studies.aw_round` alike: chunk critics cross-fitted over episodes on the table's shaped returns
    (each chunk's Â from critics that never saw its episode), clipped exponential weights of the
    normalised Â, `cfg.steps` weighted flow-matching steps kept only if they lowered the update's own loss
    (`checked_update`). Updates `policy` in place; returns the critic, weight (with Â by chunk source) and
    update metrics, and each chunk's weight ("chunk_weights", (N,))."""
    policy.to(resolve_device(cfg.device))
    data = critic_inputs(policy, table, critic_cfg.potential_feature)
    adv, critic_m = crossfit_advantages(data, table.chunks.episode, critic_cfg, cfg.folds, cfg.device)
    w, weight_m = advantage_weights(adv, cfg)
    return {"critic": critic_m, "weights": weight_m | advantage_groups(adv, table.chunks),
            "update": checked_update(policy, table, w, cfg), "chunk_weights": w.detach().cpu()}


# ---- frozen actor ----------------------------------------------------------------------------------
class QSelectPolicy:
    """The `frozen_actor` ablation: the (unchanged) policy samples K chunks, the critic keeps the one with
    the highest Q. Speaks the policy-callable interface (`bind(scene)` → `select_action`)."""

    def __init__(self, policy: Any, critic: ChunkCritic, k: int = 8, seed: int = 0) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if policy.config.type != "object_token":
            raise TypeError(f"the frozen-actor ablation (Q-selection) reads object-token features; the "
                            f"{policy.config.type!r} backend is not supported there")
        self.policy, self.critic, self.k, self.seed = policy.eval(), critic.eval(), k, seed
        self.reset()

    def reset(self, scene: Any = None) -> None:
        self.scene = scene
        self.gen = torch.Generator().manual_seed(self.seed)

    def bind(self, scene: Any) -> Any:
        self.reset(scene)
        return self.select_action

    @torch.no_grad()
    def choose(self, inputs: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """(best chunk (h, 7), Q of all K samples) for one collated observation."""
        many = {k: v.expand(self.k, *v.shape[1:]) for k, v in inputs.items()}
        chunks = self.policy.sample_actions(many, generator=self.gen)
        pooled = self.policy.encode(inputs)[2].expand(self.k, -1)
        q = self.critic.q(pooled, self.policy.normalizer.norm("actions", chunks))
        return chunks[int(q.argmax())], q

    def select_action(self, obs: Observation) -> np.ndarray:
        feats = featurize(obs, spec=self.scene, embedder=self.policy.embedder,
                          grounding=self.policy.config.grounding)
        best, _ = self.choose(collate([feats]))
        return best[: self.policy.config.execute].numpy().astype(np.float64)


# ---- policies for pool workers ---------------------------------------------------------------------
_LOADED: dict[tuple, Any] = {}  # per process: (path, mtime, seed) → policy or critic
_KEEP = 4  # loaded models kept per process


def _cached(key: tuple, make: Any) -> Any:
    if key not in _LOADED:
        if len(_LOADED) >= _KEEP:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[key] = make()
    return _LOADED[key]


Q_SELECT = "q_select"  # key of a frozen-actor checkpoint: the critic that picks among K sampled chunks


def save_q_select(policy: Any, critic: ChunkCritic, k: int, out: str | Path) -> Path:
    """The frozen-actor ablation's checkpoint: the actor as it is, plus the critic and K that pick its
    chunks at deployment (`load_seeded` then acts as `QSelectPolicy`; `fresh` gives the bare actor)."""
    from coda_policy.checkpoint import save_checkpoint

    ckpt = {**policy.checkpoint(), Q_SELECT: {"critic": critic.checkpoint(), "k": int(k)}}
    return Path(save_checkpoint(ckpt, out))  # one atomic write: never an actor without its critic


def load_seeded(path: str | Path, seed: int, fresh: bool = False, device: str = "cpu") -> Any:
    """A saved policy whose sampling noise is seeded with `seed` (its config's seed replaced), on `device`;
    cached per process unless `fresh` (a copy to train). A frozen-actor checkpoint (`save_q_select`) loads
    as its `QSelectPolicy`, or with `fresh` as the bare actor the next update starts from."""
    from coda_policy.checkpoint import load_checkpoint
    from coda_policy.registry import policy_class

    def make() -> Any:
        ckpt = load_checkpoint(path)
        ckpt["config"] = {**ckpt["config"], "seed": int(seed)}
        actor = policy_class(ckpt["config"]["type"]).from_checkpoint(ckpt).to(resolve_device(device))
        if fresh or Q_SELECT not in ckpt:
            return actor
        sel = ckpt[Q_SELECT]
        critic = ChunkCritic.from_checkpoint(sel["critic"]).to(resolve_device(device))
        return QSelectPolicy(actor, critic, sel["k"], int(seed))

    key = (str(path), Path(path).stat().st_mtime, int(seed), device)
    return make() if fresh else _cached(key, make)


@dataclass(frozen=True)
class SeededPolicy:
    """Picklable policy factory: a checkpoint with its sampling seed, bound to each scene."""

    path: str
    seed: int
    # torch intra-op threads where the factory is called (a pool worker; see coda_policy.threads)
    threads: int = WORKER_THREADS
    # where the policy acts (`coda_policy.device`); each pool worker holds its own copy there
    device: str = "cpu"

    def __call__(self, scene: Any) -> Any:
        torch.set_num_threads(self.threads)
        return load_seeded(self.path, self.seed, device=self.device).bind(scene)

    def batches(self) -> bool:
        """Whether the checkpoint's policy can act in many episodes at once (`batch`), read from its
        metadata without loading it: a frozen-actor checkpoint acts one episode at a time."""
        from coda_policy.checkpoint import read_meta
        from coda_policy.registry import policy_class

        meta = read_meta(self.path)
        return Q_SELECT not in meta and hasattr(policy_class(meta["config"]["type"]), "bind_batch")

    def batch(self, scenes: Sequence[Any]) -> Any:
        """The policy acting in every one of `scenes` at once (`sim.episode.BatchPolicy`), or None when the
        checkpoint's policy acts one episode at a time (no `bind_batch`)."""
        torch.set_num_threads(self.threads)
        policy = load_seeded(self.path, self.seed, device=self.device)
        return policy.bind_batch(scenes) if hasattr(policy, "bind_batch") else None


@dataclass(frozen=True)
class QSelectFactory:
    """Picklable factory of the frozen-actor policy: SFT checkpoint + fitted critic, best of `k` by Q."""

    path: str
    critic_path: str
    seed: int
    k: int = 8
    # torch intra-op threads where the factory is called (a pool worker; see coda_policy.threads)
    threads: int = WORKER_THREADS

    def __call__(self, scene: Any) -> Any:
        torch.set_num_threads(self.threads)
        critic = _cached((self.critic_path, Path(self.critic_path).stat().st_mtime),
                         lambda: ChunkCritic.load(self.critic_path))
        return QSelectPolicy(load_seeded(self.path, self.seed), critic, self.k, self.seed).bind(scene)
