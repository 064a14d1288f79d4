"""Motion primitives over privileged state, and the closed-loop runner that chains them into an expert.

A primitive is a target (end-effector position, yaw about the vertical, gripper command) plus a test
that says when it is done; targets may be functions of the current `WorldState`, so the expert keeps
correcting as objects move. Primitive names (approach, grasp, lift, ...) double as expert phase names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.controller import POS_SCALE, ROT_SCALE, orientation_error
from sim.world import WorldState

# gripper pointing straight down, fingers closing along world y (robosuite's neutral orientation)
R_DOWN = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
OPEN, CLOSE = -1.0, 1.0

Vec = np.ndarray | Callable[[WorldState], np.ndarray]
Num = float | Callable[[WorldState], float]


def rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def grasp_yaw(mat: np.ndarray, symmetric: float = math.pi / 2) -> float:
    """Gripper yaw that closes the fingers across an object whose body rotation is `mat`, folded into
    (−symmetric/2, symmetric/2] so the wrist turns as little as possible."""
    yaw = math.atan2(mat[1, 0], mat[0, 0])
    return (yaw + symmetric / 2) % symmetric - symmetric / 2


def ee_yaw(s: WorldState) -> float:
    """Current gripper yaw, in the convention of `rot_z(yaw) @ R_DOWN`."""
    x = s.ee_mat[:, 0]  # the finger-closing axis; at yaw 0 it is world +y
    return math.atan2(-x[0], x[1])


@dataclass
class Primitive:
    """Move to `pos` with yaw `yaw` and gripper `grip`; done when within `tol` (or after `steps`)."""

    name: str
    pos: Vec
    grip: float
    yaw: Num = 0.0
    tol: float = 0.01
    steps: int | None = None  # fixed duration (grasp/release); None → until within tol
    max_steps: int = 80
    speed: float = 1.0  # fraction of the maximum per-step translation
    until: Callable[[WorldState], bool] | None = None  # extra / alternative done test

    def target(self, s: WorldState) -> tuple[np.ndarray, float]:
        p = self.pos(s) if callable(self.pos) else self.pos
        y = self.yaw(s) if callable(self.yaw) else self.yaw
        return np.asarray(p, float), float(y)

    def action(self, s: WorldState) -> np.ndarray:
        p, y = self.target(s)
        a = np.empty(7)
        d = (p - s.ee_pos) / POS_SCALE
        n = float(np.abs(d).max())
        a[:3] = d * (self.speed / n) if n > self.speed else d
        a[3:6] = np.clip(orientation_error(rot_z(y) @ R_DOWN, s.ee_mat) / ROT_SCALE * 1.5, -1, 1)
        a[6] = self.grip
        return a

    def done(self, s: WorldState, t: int) -> bool:
        if self.steps is not None:
            return t >= self.steps
        if self.until is not None and self.until(s):
            return True
        p, y = self.target(s)
        return bool(np.linalg.norm(p - s.ee_pos) < self.tol and abs(_wrap(ee_yaw(s) - y)) < 0.1)


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


class ScriptedExpert:
    """Runs a list of primitives in order; a primitive that overruns `max_steps` moves on anyway (the
    episode's success test, not the expert, decides the outcome). `phase` names the running primitive."""

    def __init__(self, plan: list[Primitive]) -> None:
        self.plan = plan
        self.i = 0
        self.t = 0

    @property
    def phase(self) -> str:
        return self.plan[min(self.i, len(self.plan) - 1)].name

    @property
    def finished(self) -> bool:
        return self.i >= len(self.plan)

    def __call__(self, s: WorldState) -> np.ndarray:
        while self.i < len(self.plan):
            p = self.plan[self.i]
            if p.done(s, self.t) or self.t >= p.max_steps:
                self.i += 1
                self.t = 0
                continue
            self.t += 1
            return p.action(s)
        last = self.plan[-1]
        a = np.zeros(7)
        a[6] = last.grip
        return a
