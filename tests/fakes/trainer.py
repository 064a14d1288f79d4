"""A trainer without torch for graph tests: a "checkpoint" is a JSON file holding a yaw limit, and the
policy is the scripted expert on scenes whose object yaw is within the limit and a frozen arm otherwise.
Failures therefore depend on one real scene factor (so the critic and verification have something to
find), and every update widens the limit (so learning progress is measurable)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


def _yaw(scene: Any) -> float:
    return abs(float(scene.factors.get("spatial", {}).get("obj_yaw", 0.0)))


def _still(obs: Any) -> np.ndarray:
    """Hold still with the gripper open: the attempt never leaves the approach phase."""
    a = np.zeros((8, 7))
    a[:, 6] = -1.0
    return a


@dataclass(frozen=True)
class YawLimitedExpert:
    """Picklable policy factory: expert below the yaw limit, frozen above it."""

    limit: float

    def __call__(self, scene: Any) -> Any:
        from sim.episode import ExpertPolicy

        return ExpertPolicy(scene) if _yaw(scene) <= self.limit else _still


class FakeTrainer:
    """`agents.graph.deps.Trainer` with JSON checkpoints; records every call in `calls`."""

    def __init__(self, limit: float = 0.3, step: float = 0.1) -> None:
        self.limit, self.step = limit, step
        self.calls: list[tuple[str, int]] = []

    def _write(self, out: Path, limit: float) -> dict[str, Any]:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"yaw_limit": round(limit, 6)}))
        return {"yaw_limit": round(limit, 6)}

    @staticmethod
    def read(policy: Path) -> float:
        return float(json.loads(Path(policy).read_text())["yaw_limit"])

    def factory(self, policy: Path, seed: int) -> YawLimitedExpert:
        return YawLimitedExpert(self.read(policy))

    def initial(self, demos: Sequence[Path], out: Path) -> dict[str, Any]:
        self.calls.append(("initial", len(demos)))
        return self._write(out, self.limit)

    def bootstrap(self, demos: Sequence[Path], out: Path, steps: int | None = None) -> dict[str, Any]:
        self.calls.append(("bootstrap", len(demos)) if steps is None else ("bootstrap", len(demos), steps))
        return self._write(out, self.limit)

    def finetune(self, policy: Path, demos: Sequence[Path], out: Path) -> dict[str, Any]:
        self.calls.append(("finetune", len(demos)))
        return self._write(out, self.read(policy) + self.step)

    def aw_update(self, policy: Path, groups: Sequence[tuple[Any, Sequence[Path]]], out: Path, *,
                  shaping: str, seed: int) -> dict[str, Any]:
        self.calls.append((f"aw_update:{shaping}", sum(len(e) for _, e in groups)))
        for _, episodes in groups:
            assert all(Path(e).exists() for e in episodes), "aw_update got a missing episode file"
        return self._write(out, self.read(policy) + self.step)
