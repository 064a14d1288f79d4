"""A scripted pick-and-place expert for LIBERO over privileged state.

Goals it knows: `(On obj target)` — the target an object (a plate) or a region (a stove's cook region, a
cabinet's top) — and `(In obj region)` (a basket's contain region, a drawer's region that is already
open). That is every task of `libero_spatial` and `libero_object` and the pick-place tasks of
`libero_goal`; anything else raises `UnsupportedGoal`, so an evaluation reports it instead of scoring it.

The motion, each stage a phase label: approach (above the grasp point) → grasp (descend, close) → lift →
transport (at a safe height to above the target) → place (descend) → release → retreat. Bowls are taken by
the rim (fingers across the wall), everything else across its middle from above. Positions come from the
simulator (object bounding boxes, region sites), recomputed where they matter: the grasp point when the
approach starts, the target when transport starts, the object's height below the hand once it is held.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sim.libero.env import Box, LiberoEnv

PHASES = ("approach", "grasp", "lift", "transport", "place", "release", "retreat")
GAIN = 12.0  # position error (m) → action units; an action of 1 moves the set-point 5 cm
OPEN, CLOSE = -1.0, 1.0
STALL_STEPS, STALL_M = 6, 0.002  # a move ends early when the hand went less than 2 mm in 6 steps
STALL_RAD = 0.01  # ... and, when it turns, its orientation error changed less than this (rad)
ROT_GAIN, ROT_TOL = 2.0, 0.05  # orientation error (rad) → action units (1 turns 0.5 rad); done within (rad)


class UnsupportedGoal(ValueError):
    """The task's goal is not one the scripted expert can reach (an articulated fixture, a stove knob...)."""


def _rot_error(env: LiberoEnv, rot: np.ndarray) -> np.ndarray:
    """The axis-angle (rad, world frame) that turns the hand's orientation into `rot`."""
    import robosuite.utils.transform_utils as T

    now = T.quat2mat(np.asarray(env.obs["robot0_eef_quat"], dtype=float))
    return np.asarray(T.quat2axisangle(T.mat2quat(rot @ now.T)), dtype=float)


def move(env: LiberoEnv, target: np.ndarray, grip: float, max_steps: int,
          tol: float, rot: np.ndarray | None = None, speed: float = 1.0) -> Iterator[np.ndarray]:
    """Toward `target` (and, given `rot`, the hand orientation `rot`; otherwise no rotation is commanded)
    until within `tol` (and ROT_TOL), blocked, or `max_steps`; position actions at most `speed`."""
    trail: list[np.ndarray] = []
    for i in range(max_steps):
        err = target - env.eef
        turn = np.zeros(3) if rot is None else _rot_error(env, rot)
        trail.append(np.r_[env.eef, turn])
        if i > 2 and float(np.linalg.norm(err)) < tol and float(np.linalg.norm(turn)) < ROT_TOL:
            return
        moved = trail[-1] - trail[-1 - STALL_STEPS] if len(trail) > STALL_STEPS else None
        if moved is not None and float(np.linalg.norm(moved[:3])) < STALL_M \
                and float(np.linalg.norm(moved[3:])) < STALL_RAD:
            return  # blocked (the object touches down, a finger meets the rim): go on from here
        a = np.zeros(7)
        a[:3] = np.clip(err * GAIN, -speed, speed)
        a[3:6] = np.clip(turn * ROT_GAIN, -1.0, 1.0)
        a[6] = grip
        yield a


def hold(grip: float, steps: int, env: LiberoEnv | None = None,
         rot: np.ndarray | None = None) -> Iterator[np.ndarray]:
    for _ in range(steps):
        turn = np.zeros(3) if rot is None or env is None else _rot_error(env, rot)
        yield np.r_[np.zeros(3), np.clip(turn * ROT_GAIN, -1.0, 1.0), grip]


class ScriptedExpert:
    """A script played on a `LiberoEnv` step by step: `act()` → the next action, `phase` → the current stage;
    a subclass sets `phase` and `_plan` (its `_script()`) and says where a failure happened."""

    phase: str
    done = False  # the script ran to its end
    _plan: Iterator[np.ndarray]

    def act(self) -> np.ndarray:
        """The next action; after the script ends, hold still with the gripper open."""
        a = next(self._plan, None)
        if a is None:
            self.done = True
            return np.r_[np.zeros(6), OPEN]
        return a

    def failure_phase(self) -> str:
        raise NotImplementedError


class PickPlaceExpert(ScriptedExpert):
    """Carries the goal's object onto or into its target."""

    def __init__(self, env: LiberoEnv) -> None:
        goal = env.goal
        if len(goal) != 1 or goal[0][0] not in ("on", "in") or not env.is_object(goal[0][1]):
            raise UnsupportedGoal(f"{env.name}: goal {goal} is not (On|In movable-object target)")
        self.env = env
        self.obj, self.target = goal[0][1], goal[0][2]
        self.phase = PHASES[0]
        self.lifted: bool | None = None  # after the lift: did the object leave its support?
        self._plan = self._script()

    def failure_phase(self) -> str:
        """Where an unsuccessful episode went wrong, as far as the expert can tell: "grasp" when the lift
        left the object where it was, the stage it was in when the step limit came, or "place" when the
        script ran to its end with the object carried but not in place."""
        if self.lifted is False:
            return "grasp"
        return "place" if self.done else self.phase

    # ---- geometry --------------------------------------------------------------------------------------
    def _owner(self, region: str) -> str | None:
        """The object or fixture a region belongs to (its name's longest known prefix)."""
        names = [n for n in (*self.env.object_names, *self.env.fixture_names) if region.startswith(n)]
        return max(names, key=len) if names else None

    def _target_point(self) -> tuple[np.ndarray, float]:
        """(x, y) to place over and the height (z) the object must clear there."""
        env = self.env
        if env.is_object(self.target):
            b = env.box(self.target)
            return b.center[:2], float(b.hi[2])
        if not env.has_site(self.target):
            raise UnsupportedGoal(f"{env.name}: no object or region site named {self.target!r}")
        p = env.site_pos(self.target)
        owner = self._owner(self.target)
        top = float(p[2])
        if owner is not None and env.is_object(owner):  # a basket: clear its rim
            top = max(top, float(env.box(owner).hi[2]))
        return p[:2], top

    def _grasp_point(self, b: Box) -> np.ndarray:
        if "bowl" in self.obj:  # by the rim: fingers (closing along y) across the wall
            r = max(float(min(b.size[0], b.size[1])) / 2 - 0.008, 0.0)
            return np.array([b.center[0], b.center[1] + r, b.hi[2] - 0.02])
        z = max(float(b.hi[2]) - min(0.03, float(b.size[2]) / 2), float(b.lo[2]) + 0.015)
        return np.array([b.center[0], b.center[1], z])

    # ---- the script ------------------------------------------------------------------------------------
    def _script(self) -> Iterator[np.ndarray]:
        env = self.env
        b = env.box(self.obj)
        g = self._grasp_point(b)
        self.phase = "approach"
        yield from move(env, g + [0, 0, 0.12], OPEN, 90, 0.01)
        self.phase = "grasp"
        yield from move(env, g, OPEN, 60, 0.005)
        yield from hold(CLOSE, 15)
        self.phase = "lift"
        yield from move(env, env.eef + [0, 0, 0.18], CLOSE, 50, 0.01)
        held = env.box(self.obj)
        self.lifted = bool(held.lo[2] > b.lo[2] + 0.03)
        hang = float(env.eef[2] - held.lo[2])  # the object's bottom this far below the hand
        offset = env.eef[:2] - held.center[:2]  # the hand's offset from the object's middle
        xy, top = self._target_point()
        self.phase = "transport"
        safe = max(float(env.eef[2]), top + hang + 0.08)
        yield from move(env, np.r_[xy + offset, safe], CLOSE, 100, 0.01)
        self.phase = "place"
        yield from move(env, np.r_[xy + offset, top + hang + 0.02], CLOSE, 50, 0.008)
        self.phase = "release"
        yield from hold(OPEN, 10)
        self.phase = "retreat"
        yield from move(env, env.eef + [0, 0, 0.10], OPEN, 25, 0.01)
