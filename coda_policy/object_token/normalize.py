"""Normalisation statistics computed from data (mean/std per feature, with a floor on std), kept in the
policy as buffers so that a checkpoint carries them and a load restores them exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from coda_policy.object_token.features import KINDS, ROBOT_DIM, obj_dim

# object-token dims that are categorical or already unit-scaled (kind one-hot, rgba, flags, category code):
# left as they are, so an unseen category or colour cannot blow up after division by a tiny std
_OBJ_CONTINUOUS = slice(len(KINDS), len(KINDS) + 15)  # pos, pos - ee, half extents, rotation 6D
ACTION_MIN_STD = 0.05  # expert rotation actions are ~1e-3: do not amplify their noise to unit scale
FEATURE_MIN_STD = 0.01  # 1 cm: positions keep their precision, constant dims do not divide by zero


@dataclass(frozen=True)
class Stats:
    """Per-dimension mean and std of one feature group."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, min_std: float, keep: slice | None = None) -> Stats:
        x = np.asarray(x, np.float64).reshape(-1, np.shape(x)[-1])
        if len(x) == 0:
            raise ValueError("cannot compute normalisation statistics from no data")
        mean, std = x.mean(0), np.maximum(x.std(0), min_std)
        if keep is not None:  # normalise only these dims
            m, s = np.zeros_like(mean), np.ones_like(std)
            m[keep], s[keep] = mean[keep], std[keep]
            mean, std = m, s
        return cls(mean.astype(np.float32), std.astype(np.float32))

    @classmethod
    def identity(cls, dim: int) -> Stats:
        return cls(np.zeros(dim, np.float32), np.ones(dim, np.float32))


@dataclass(frozen=True)
class NormStats:
    """Statistics of the robot features, object tokens (real rows only) and actions."""

    robot: Stats
    objects: Stats
    actions: Stats

    @classmethod
    def identity(cls, action_dim: int = 7, grounding: bool = False) -> NormStats:
        return cls(Stats.identity(ROBOT_DIM), Stats.identity(obj_dim(grounding)), Stats.identity(action_dim))

    @classmethod
    def compute(cls, robot: np.ndarray, objects: np.ndarray, actions: np.ndarray) -> NormStats:
        """`objects` holds real (unpadded) token rows only, shape (M, token width)."""
        return cls(
            Stats.of(robot, FEATURE_MIN_STD),
            Stats.of(objects, FEATURE_MIN_STD, keep=_OBJ_CONTINUOUS),
            Stats.of(actions, ACTION_MIN_STD),
        )


class Normalizer(nn.Module):
    """Buffers of a `NormStats`; part of the policy's state dict."""

    GROUPS = ("robot", "objects", "actions")

    def __init__(self, stats: NormStats) -> None:
        super().__init__()
        for g in self.GROUPS:
            s: Stats = getattr(stats, g)
            self.register_buffer(f"{g}_mean", torch.as_tensor(s.mean, dtype=torch.float32).clone())
            self.register_buffer(f"{g}_std", torch.as_tensor(s.std, dtype=torch.float32).clone())

    def set(self, stats: NormStats) -> None:
        """Replace the statistics in place (shapes must match)."""
        for g in self.GROUPS:
            s: Stats = getattr(stats, g)
            getattr(self, f"{g}_mean").copy_(torch.as_tensor(s.mean))
            getattr(self, f"{g}_std").copy_(torch.as_tensor(s.std))

    def stats(self) -> NormStats:
        return NormStats(
            *(
                Stats(getattr(self, f"{g}_mean").numpy().copy(), getattr(self, f"{g}_std").numpy().copy())
                for g in self.GROUPS
            )
        )

    def norm(self, group: str, x: torch.Tensor) -> torch.Tensor:
        return (x - getattr(self, f"{group}_mean")) / getattr(self, f"{group}_std")

    def denorm(self, group: str, x: torch.Tensor) -> torch.Tensor:
        return x * getattr(self, f"{group}_std") + getattr(self, f"{group}_mean")
