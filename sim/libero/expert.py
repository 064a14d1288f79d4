"""A scripted pick-and-place expert for LIBERO over privileged state.

Goals it knows: `(On obj target)` — the target an object (a plate) or a region (a stove's cook region, a
cabinet's top) — and `(In obj region)` (a basket's contain region, a drawer's region that is already
open). That is every task of `libero_spatial` and `libero_object` and the pick-place tasks of
`libero_goal`; anything else raises `UnsupportedGoal`, so an evaluation reports it instead of scoring it.

The motion, each stage a phase label: approach (above the grasp point) → grasp (descend, close) → lift →
transport (at a safe height to above the target) → place (descend) → release → retreat. Bowls are taken by
the rim (fingers across the wall): on the +y side, or, where a wall stands in the outer finger's way (a
drawer), on the nearest clear side with the hand turned about the vertical; a bowl that tipped over (off
LIBERO's ramekin) at its highest rim point. Everything else is taken across its middle from above.
Positions come from the simulator (object bounding boxes, region sites), recomputed where they matter: the
grasp point when the approach starts and again when it ends (the hand approaches again if the object
moved), the target when transport starts, the object's height below the hand once it is held.
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
TILTED, TILTED_DEPTH = 0.3, 0.015  # a bowl leaning more than this (rad) is taken this far below its high rim
FINGER_OUT = (0.025, 0.04, 0.055)  # m beyond the rim: where the open outer finger (its outer face) comes down
REAIM_M = 0.005  # the grasp point moved this far during the approach: approach it again
ROT_GAIN, ROT_TOL = 2.0, 0.05  # orientation error (rad) → action units (1 turns 0.5 rad); done within (rad)


class UnsupportedGoal(ValueError):
    """The task's goal is not one the scripted expert can reach (an articulated fixture, a stove knob...)."""


def _rot_error(env: LiberoEnv, rot: np.ndarray) -> np.ndarray:
    """The axis-angle (rad, world frame) that turns the hand's orientation into `rot`."""
    import robosuite.utils.transform_utils as T

    return np.asarray(T.quat2axisangle(T.mat2quat(rot @ env.eef_mat.T)), dtype=float)


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
        self.hand0 = env.eef_mat  # the hand's orientation at the start (after the reset): turns are from it
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

    def _grasp(self, b: Box) -> tuple[np.ndarray, np.ndarray | None]:
        """Where to close the hand, and the hand orientation to close it in (None: as it is). A bowl is
        taken by the rim, the fingers across the wall: upright, on its +y side as the hand stands, or —
        when that finger's path is blocked (a drawer's wall) — on the nearest side whose path is free, the
        hand turned about the vertical; leaning (it slid or tipped off a support), at its highest rim
        point, a little below the rim and outward along the wall's slant."""
        if "bowl" not in self.obj:
            return self._grasp_point(b), None
        pos, mat = self.env.pose(self.obj)
        axis = mat[:, 2]
        tilt = float(np.arccos(np.clip(axis[2], -1.0, 1.0)))
        if tilt < TILTED:
            side = self._free_side(b)
            if side is None:
                return self._grasp_point(b), None
            return self._rim(b, side), self._turned(side)
        c, h = self.env.local_box(self.obj)
        rim_r = max(float(min(h[0], h[1])) - 0.008, 0.0)
        up = np.array([0.0, 0.0, 1.0]) - axis[2] * axis  # the rim's highest direction from its centre
        up /= float(np.linalg.norm(up))
        rim = pos + mat @ np.r_[c[:2], c[2] + h[2]] + rim_r * up
        out = up[:2] / float(np.linalg.norm(up[:2]))
        g = np.r_[rim[:2] + out * TILTED_DEPTH * np.tan(min(tilt, 1.2)), rim[2] - TILTED_DEPTH]
        return g, self._turned(out)

    def _turned(self, side: np.ndarray) -> np.ndarray:
        """The hand orientation whose fingers close along the horizontal direction `side` (they close along
        world y as the hand starts): the start turned about the vertical by at most 90°."""
        yaw = float(np.arctan2(-side[0], side[1]))
        yaw = (yaw + np.pi / 2) % np.pi - np.pi / 2
        cz, sz = np.cos(yaw), np.sin(yaw)
        return np.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]]) @ self.hand0

    def _free_side(self, b: Box) -> np.ndarray | None:
        """None when the outer finger's way down on the bowl's +y side is clear of every other object and
        fixture; else the horizontal direction nearest +y (of 16) whose way is clear, or None if none is."""
        others = [n for n in (*self.env.object_names, *self.env.fixture_names) if n != self.obj]
        r = float(min(b.size[0], b.size[1])) / 2
        top = float(b.hi[2])

        def blocked(d: np.ndarray) -> bool:
            across = np.array([-d[1], d[0]])
            pts = [np.r_[b.center[:2] + (r + out) * d + w * across, top + z]
                   for out in FINGER_OUT for w in (-0.01, 0.0, 0.01) for z in (-0.02, 0.0, 0.03, 0.06)]
            return any(self.env.inside(n, np.array(pts)).any() for n in others)

        from_y = lambda a: abs((a - np.pi / 2 + np.pi) % (2 * np.pi) - np.pi)  # noqa: E731
        angles = sorted(np.arange(16) * np.pi / 8, key=from_y)
        dirs = [np.array([np.cos(a), np.sin(a)]) for a in angles]
        if not blocked(dirs[0]):
            return None
        return next((d for d in dirs[1:] if not blocked(d)), None)

    @staticmethod
    def _rim(b: Box, side: np.ndarray) -> np.ndarray:
        """An upright bowl's grasp point on its rim on horizontal side `side`: on the wall, 2 cm down."""
        r = max(float(min(b.size[0], b.size[1])) / 2 - 0.008, 0.0)
        return np.r_[b.center[:2] + r * side, b.hi[2] - 0.02]

    def _grasp_point(self, b: Box) -> np.ndarray:
        if "bowl" in self.obj:  # by the rim: fingers (closing along y) across the wall
            return self._rim(b, np.array([0.0, 1.0]))
        z = max(float(b.hi[2]) - min(0.03, float(b.size[2]) / 2), float(b.lo[2]) + 0.015)
        return np.array([b.center[0], b.center[1], z])

    # ---- the script ------------------------------------------------------------------------------------
    def _script(self) -> Iterator[np.ndarray]:
        env = self.env
        b = env.box(self.obj)
        g, rot = self._grasp(b)
        self.phase = "approach"
        yield from move(env, g + [0, 0, 0.12], OPEN, 90, 0.01, rot)
        now, rot = self._grasp(env.box(self.obj))
        if float(np.linalg.norm(now - g)) > REAIM_M:  # it moved while the hand came (settling off a support)
            g, b = now, env.box(self.obj)
            yield from move(env, g + [0, 0, 0.12], OPEN, 40, 0.01, rot)
        self.phase = "grasp"
        yield from move(env, g, OPEN, 60, 0.005, rot)
        yield from hold(CLOSE, 15, env, rot)
        self.phase = "lift"
        yield from move(env, env.eef + [0, 0, 0.18], CLOSE, 50, 0.01, rot)
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
