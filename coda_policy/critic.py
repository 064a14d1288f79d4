"""`ChunkCritic`: Q(s, A) over the policy encoder's pooled features and a flattened, normalised action chunk,
and V(s) over the features alone; optional twin Q (the minimum feeds targets); a target copy kept by EMA.

It is trained on shaped chunk returns (`coda_policy.shaping`, DESIGN §4):
    Q(s_t, A_t) ← G + γ^n V̄(s_{t+n})   (the bootstrap only where the chunk does not end in success)
    V(s)        ← expectile_κ of min_i Q̄_i(s, A) over the data's chunks (κ = 0.5: the data's mean value)
where ¯ marks the EMA target network. The features are computed once, detached from the policy's graph:
the critic never moves the policy's encoder.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn


@dataclass(frozen=True, kw_only=True)
class ChunkCriticConfig:
    """Chunk critic size and training."""

    # hidden width of the Q and V MLPs
    hidden: int = 256
    # hidden layers of each MLP
    layers: int = 2
    # two Q heads; targets use their minimum (clipped double Q)
    twin: bool = True
    # polyak rate of the target network per step (target ← (1 − ema)·target + ema·online)
    ema: float = 0.01
    # expectile κ of V's regression on Q (0.5 = mean; > 0.5 leans toward the best chunks in the data)
    expectile: float = 0.5
    # AdamW learning rate and weight decay
    lr: float = 3e-4
    weight_decay: float = 1e-4
    # samples per step
    batch_size: int = 256
    # optimiser steps per fit
    steps: int = 2000
    # gradient-norm clip
    grad_clip: float = 10.0
    # seed of initialisation and minibatch sampling
    seed: int = 0
    # append βΦ(s) to the state features (training-time only, like the critic): shaped values carry a
    # −βΦ(s) offset that an MLP over encoder features otherwise has to re-learn, and its errors swamp Â
    potential_feature: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.ema <= 1:
            raise ValueError(f"ema must be in (0, 1], got {self.ema}")
        if not 0 < self.expectile < 1:
            raise ValueError(f"expectile must be in (0, 1), got {self.expectile}")
        for name in ("hidden", "layers", "batch_size", "steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


def _mlp(d_in: int, hidden: int, layers: int) -> nn.Sequential:
    mods: list[nn.Module] = []
    d = d_in
    for _ in range(layers):
        mods += [nn.Linear(d, hidden), nn.LayerNorm(hidden), nn.GELU()]
        d = hidden
    mods.append(nn.Linear(d, 1))
    return nn.Sequential(*mods)


class ChunkCritic(nn.Module):
    """Q heads over [features, flattened chunk], a V head over features, and an EMA target copy."""

    def __init__(self, feat_dim: int, chunk: int, action_dim: int,
                 config: ChunkCriticConfig | None = None) -> None:
        super().__init__()
        self.config = c = config or ChunkCriticConfig()
        self.feat_dim, self.chunk, self.action_dim = feat_dim, chunk, action_dim
        with torch.random.fork_rng():
            torch.manual_seed(c.seed)
            self.qs = nn.ModuleList(_mlp(feat_dim + chunk * action_dim, c.hidden, c.layers)
                                    for _ in range(2 if c.twin else 1))
            self.v_net = _mlp(feat_dim, c.hidden, c.layers)
        self.target: ChunkCritic | None = None
        self.reset_target()

    def reset_target(self) -> None:
        """Target ← a frozen copy of the online heads."""
        self.target = None  # not part of the copy
        tgt = copy.deepcopy(self)
        tgt.requires_grad_(False)
        self.__dict__["target"] = tgt  # a plain attribute: not a submodule, not in state_dict()

    def q_all(self, feats: Tensor, actions: Tensor) -> Tensor:
        """(n_q, B) every Q head; `actions` (B, h, action_dim) normalised."""
        x = torch.cat([feats, actions.reshape(len(actions), -1)], dim=-1)
        return torch.stack([q(x).squeeze(-1) for q in self.qs])

    def q(self, feats: Tensor, actions: Tensor) -> Tensor:
        """(B,) the minimum over Q heads."""
        return self.q_all(feats, actions).min(0).values

    def v(self, feats: Tensor) -> Tensor:
        """(B,) state value."""
        return self.v_net(feats).squeeze(-1)

    @torch.no_grad()
    def update_target(self, rate: float | None = None) -> None:
        """Polyak step of the target toward the online heads."""
        rate = self.config.ema if rate is None else rate
        for p_t, p in zip(self.target.parameters(), self.parameters(), strict=True):
            p_t.lerp_(p, rate)

    def checkpoint(self) -> dict:
        """Config, sizes and online weights (the target restarts as their copy on load)."""
        weights = {k: v.cpu() for k, v in self.state_dict().items()}
        return {"config": dataclasses.asdict(self.config), "feat_dim": self.feat_dim, "chunk": self.chunk,
                "action_dim": self.action_dim, "state_dict": weights}

    def save(self, path: str | Path) -> Path:
        """`checkpoint()` as one .safetensors file (`coda_policy.checkpoint`)."""
        from coda_policy.checkpoint import save_checkpoint

        return save_checkpoint(self.checkpoint(), path)

    @classmethod
    def load(cls, path: str | Path) -> ChunkCritic:
        from coda_policy.checkpoint import load_checkpoint

        return cls.from_checkpoint(load_checkpoint(path))

    @classmethod
    def from_checkpoint(cls, ck: dict) -> ChunkCritic:
        critic = cls(ck["feat_dim"], ck["chunk"], ck["action_dim"], ChunkCriticConfig(**ck["config"]))
        critic.load_state_dict(ck["state_dict"])
        critic.reset_target()
        return critic.eval()


@dataclass(frozen=True)
class CriticData:
    """Tensors of N chunk transitions: features at both ends, normalised chunk, shaped return, bootstrap."""

    feats: Tensor  # (N, d) pooled features of s_t
    actions: Tensor  # (N, h, a) normalised action chunk
    next_feats: Tensor  # (N, d) pooled features of s_{t+n}
    ret: Tensor  # (N,) shaped chunk return G
    discount: Tensor  # (N,) γ^n
    bootstrap: Tensor  # (N,) 1.0 where the target adds γ^n V(s_{t+n})

    def __len__(self) -> int:
        return len(self.ret)

    def subset(self, idx: Tensor) -> CriticData:
        """Rows `idx` only."""
        return CriticData(*(getattr(self, f.name)[idx.to(self.ret.device)] for f in dataclasses.fields(self)))

    def to(self, device: torch.device | str) -> CriticData:
        """Every column on `device` (the same object where it already is)."""
        if self.ret.device == torch.device(device):
            return self
        return CriticData(*(getattr(self, f.name).to(device) for f in dataclasses.fields(self)))


def expectile_loss(diff: Tensor, kappa: float) -> Tensor:
    """Asymmetric squared loss: weight κ where diff > 0, 1 − κ elsewhere (κ = 0.5: half the MSE)."""
    w = torch.where(diff > 0, kappa, 1.0 - kappa)
    return (w * diff**2).mean()


def critic_losses(critic: ChunkCritic, d: CriticData, idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(Q loss, V loss, TD targets) on rows `idx`."""
    s, a, s2 = d.feats[idx], d.actions[idx], d.next_feats[idx]
    tgt = critic.target
    with torch.no_grad():
        y = d.ret[idx] + d.bootstrap[idx] * d.discount[idx] * tgt.v(s2)
        q_bar = tgt.q(s, a)
    q_loss = ((critic.q_all(s, a) - y[None]) ** 2).mean(1).sum()
    v_loss = expectile_loss(q_bar - critic.v(s), critic.config.expectile)
    return q_loss, v_loss, y


def fit_critic(critic: ChunkCritic, data: CriticData, steps: int | None = None, *,
               val: CriticData | None = None, log_every: int = 0, log=print) -> dict[str, float]:
    """Train for a fixed number of steps on random minibatches; returns final metrics (on `val` too, as
    "val_*", when given: held-out transitions show whether the critic generalises or memorises)."""
    c = critic.config
    steps = c.steps if steps is None else steps
    opt = torch.optim.AdamW(critic.parameters(), lr=c.lr, weight_decay=c.weight_decay, foreach=True)
    gen = torch.Generator().manual_seed(c.seed)
    n = len(data)
    critic.train()
    q_loss = v_loss = torch.tensor(0.0)
    for step in range(steps):
        # indices from a CPU generator (the same minibatches on every device), rows where the data lives
        idx = torch.randint(n, (min(c.batch_size, n),), generator=gen).to(data.ret.device)
        q_loss, v_loss, _ = critic_losses(critic, data, idx)
        opt.zero_grad(set_to_none=True)
        (q_loss + v_loss).backward()
        nn.utils.clip_grad_norm_(critic.parameters(), c.grad_clip)
        opt.step()
        critic.update_target()
        if log_every and (step + 1) % log_every == 0:
            log(f"critic step {step + 1}/{steps}: q_loss {float(q_loss):.4f} v_loss {float(v_loss):.4f}")
    critic.eval()
    out = evaluate_critic(critic, data) | {"q_loss_last": float(q_loss.detach()),
                                           "v_loss_last": float(v_loss.detach())}
    if val is not None and len(val):
        out |= {f"val_{k}": v for k, v in evaluate_critic(critic, val).items()}
    return out


@torch.no_grad()
def evaluate_critic(critic: ChunkCritic, data: CriticData) -> dict[str, float]:
    """Fit on the whole set: TD error, explained variance of the targets, mean Q and V."""
    idx = torch.arange(len(data), device=data.ret.device)
    _, _, y = critic_losses(critic, data, idx)
    q = critic.q(data.feats, data.actions)
    v = critic.v(data.feats)
    var = float(y.var()) if len(y) > 1 else 0.0
    ev = 1.0 - float((y - q).var()) / var if var > 1e-12 else float("nan")
    return {"td_mse": float(((q - y) ** 2).mean()), "explained_var": ev, "q_mean": float(q.mean()),
            "v_mean": float(v.mean()), "target_mean": float(y.mean()), "adv_std": float((q - v).std())}


def critic_data(feats: np.ndarray, actions: np.ndarray, next_feats: np.ndarray, ret: np.ndarray,
                discount: np.ndarray, bootstrap: np.ndarray) -> CriticData:
    """`CriticData` from numpy arrays (float32 tensors)."""
    f = lambda x: torch.as_tensor(np.asarray(x, np.float32))  # noqa: E731
    return CriticData(f(feats), f(actions), f(next_feats), f(ret), f(discount), f(bootstrap))
