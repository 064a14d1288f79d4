"""Articulated: open or close one drawer of a two-drawer cabinet, or a hinged cabinet door.

The expert grasps the handle bar from above with the fingers closing across it, then drags it along
the joint: straight out/in for a drawer, along the hinge arc (turning the wrist with the door) for a
door. Every target is recomputed from the state, so the expert follows the handle as it moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from sim.builder import ROBOT_BASE, ROBOT_INIT_QPOS
from sim.experts.primitives import CLOSE, Primitive, ScriptedExpert, ee_yaw, rot_z
from sim.families.articulated import scene
from sim.families.base import TaskFamily
from sim.families.phases import APPROACH, GRASP, PULL, RELEASE
from sim.fixtures import params as fixture_params
from sim.predicates import goal_reached, grasped, open_frac
from sim.scene import FixtureSpec, SceneSpec
from sim.world import WorldState

OPEN_UNTIL, CLOSE_UNTIL = 0.9, 0.03  # the expert drags past the goal threshold by this much
PRE = 0.0  # pre-grasp gripper command: half open (4 cm), so the inner finger fits between bar and face
NEAR = 0.025  # grip site this close to the handle counts as "at the handle" (m)
ABOVE = 0.08  # approach height above the handle (m)
LEAD = 0.2  # rad the door-swing target runs ahead of the handle along its arc

# closing: as pulling, but the joint's start decides whether there is anything left to push
PUSH = replace(PULL, name="push", relevance={**PULL.relevance, "joint_init": 1.0})
PHASES = (replace(APPROACH, emphasis="near_handle"), replace(GRASP, emphasis="at_handle"), PULL, PUSH,
          replace(RELEASE, emphasis=None))


def _task(spec: SceneSpec) -> tuple[FixtureSpec, str, bool]:
    """The fixture, the full joint name, and whether the task opens it — read back from the goal."""
    goal = spec.goal[0]
    joint = str(goal.args[0])
    return spec.fixture(joint.split("/")[0]), joint, goal.fn == "opened"


def hinge_xy(f: FixtureSpec) -> np.ndarray:
    """World (x, y) of a door fixture's hinge axis (see `sim.fixtures._door`)."""
    p = fixture_params(f)
    local = np.array([-p["depth"] / 2 - p["wall"] / 2 - 0.002, -p["width"] / 2])
    return np.asarray(f.pos) + rot_z(f.yaw)[:2, :2] @ local


def _turn(s: WorldState, f: FixtureSpec, joint: str) -> float:
    """How far the handle bar has turned from its closed pose: the door angle; drawers do not turn."""
    return float(s.joint_q[s.joint(joint)]) if f.kind == "door" else 0.0


def wrist_side(s: WorldState, f: FixtureSpec, joint: str, opening: bool) -> float:
    """+1 or −1: which of the two grasps across the bar (gripper yaw = bar yaw ∓ π/2) keeps the Panda's
    last joint furthest from its ±2.9 rad limits over the whole motion. That joint sits near
    q7_init + (bearing of the handle from the base) − gripper yaw, so the yaw should stay near
    bearing + q7_init; the controller turns to the first yaw the short way round."""
    h = s.handle(joint)
    centre = math.atan2(h[1] - ROBOT_BASE[1], h[0] - ROBOT_BASE[0]) + ROBOT_INIT_QPOS[6]
    t0 = _turn(s, f, joint)
    lo, hi = s.layout.joint_range[s.joint(joint)]
    t1 = float(lo + (hi - lo) * (OPEN_UNTIL if opening else CLOSE_UNTIL)) if f.kind == "door" else t0
    now = ee_yaw(s)

    def reach(side: float) -> float:
        start = now + _wrap(f.yaw + t0 - side * math.pi / 2 - now)
        return max(abs(start - centre), abs(start + t1 - t0 - centre))

    return min((1.0, -1.0), key=reach)


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


def _drag_target(f: FixtureSpec, joint: str, opening: bool) -> Callable[[WorldState], np.ndarray]:
    """Where to pull the handle next: straight along a drawer's slide, or `LEAD` rad ahead along the
    door's arc about its hinge."""
    if f.kind != "door":
        out = rot_z(f.yaw)[:, 0] * (-1.0 if opening else 1.0)  # drawers slide along the fixture's −x to open
        return lambda s: s.handle(joint) + 0.03 * out
    c, turn = hinge_xy(f), rot_z(LEAD if opening else -LEAD)[:2, :2]

    def target(s: WorldState) -> np.ndarray:
        h = s.handle(joint)
        return np.r_[c + turn @ (h[:2] - c), h[2]]

    return target


def articulate(f: FixtureSpec, joint: str, opening: bool) -> list[Primitive]:
    """Grasp `joint`'s handle from above and drag it open (or shut), release, retreat."""
    chosen: dict[str, float] = {}
    lead = 0.5 * LEAD * (1.0 if opening else -1.0) if f.kind == "door" else 0.0  # turn the wrist ahead too

    def grip_yaw(s: WorldState) -> float:  # fingers across the bar, which turns with a door
        if "side" not in chosen:  # decided once, from the first state
            chosen["side"] = wrist_side(s, f, joint, opening)
        return f.yaw + _turn(s, f, joint) - chosen["side"] * math.pi / 2

    def at(dz: float) -> Callable[[WorldState], np.ndarray]:
        return lambda s: s.handle(joint) + [0.0, 0.0, dz]

    def far_enough(s: WorldState) -> bool:
        x = open_frac(s, joint)
        return x >= OPEN_UNTIL if opening else x <= CLOSE_UNTIL

    drag = Primitive("pull" if opening else "push", _drag_target(f, joint, opening), CLOSE,
                     lambda s: grip_yaw(s) + lead, speed=0.5, until=far_enough, max_steps=150, tol=0.0)
    return [
        Primitive("approach", at(ABOVE), PRE, grip_yaw, tol=0.01, max_steps=100),
        Primitive("approach", at(0.003), PRE, grip_yaw, tol=0.005, speed=0.4),
        Primitive("grasp", at(0.003), CLOSE, grip_yaw, steps=8),
        drag,
        Primitive("release", lambda s: s.ee_pos.copy(), PRE, grip_yaw, steps=6),
        Primitive("retreat", at(ABOVE), PRE, grip_yaw, tol=0.02, max_steps=40),
    ]


class Articulated(TaskFamily, name="articulated"):
    """Open or close a cabinet drawer or door; goal `opened(joint, 0.75)` or `closed(joint, 0.1)`."""

    builder = scene
    phase_table = PHASES

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        f, joint, opening = _task(spec)
        return ScriptedExpert(articulate(f, joint, opening))

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        f, joint, opening = _task(spec)
        held = grasped(s, f.name)
        if goal_reached(s, spec.goal):
            return "release" if held else "done"
        if held:
            return "pull" if opening else "push"
        near = float(np.linalg.norm(s.ee_pos - s.handle(joint))) < NEAR
        return "grasp" if near else "approach"

    @classmethod
    def label(cls, spec: SceneSpec, states: list[WorldState]) -> tuple[list[str], str | None]:
        """As the base, but a final state that meets the goal is a success even if the handle is still
        held (the goal, like `SimEnv.success`, says nothing about letting go)."""
        labels, failed = super().label(spec, states)
        return labels, (None if states and goal_reached(states[-1], spec.goal) else failed)

