"""Push: slide an object along the table until it touches a heavy target block. The scene itself is built
by `scene.py`.

The expert closes the gripper, comes down behind the object (on the far side from the target) and drives
the hand through it towards the target, re-aiming at every step at a point just ahead of the object on the
line to the target, until the two touch.
"""

from __future__ import annotations

import math

import numpy as np

from sim.experts.primitives import CLOSE, Primitive, ScriptedExpert
from sim.families.base import TaskFamily
from sim.families.phases import APPROACH, Phase
from sim.families.push import scene
from sim.predicates import goal_reached, in_contact
from sim.scene import SceneSpec
from sim.world import WorldState

BEHIND = 0.025  # gap between the object's side and the fingers before the push starts (m)
LEAD = 0.05  # the push aims this far ahead of the object's centre (m)
HOVER = 0.1  # approach height of the grip site above the table (m)
NEAR = 0.02  # the hand is in pushing posture within this of the object's back side (m)
PRESS = 0.01  # the push aims this far below the push height, against the lift of the contact (m)

# the hand behind the object drives it along the table into the target. What breaks that: where the target
# is (the push's length and direction, as for a carry); what resists the hand (friction is the hard side
# here, unlike in a lift, and mass); a round object rolling off the line or a turned one pivoting on its
# corner; a small object slipping past the fingers; a narrow target a veering object misses.
SLIDE = Phase(name="slide", stages=("push",), emphasis="centred_over_target", relevance={
    "target_pos": 1.0, "friction": 0.8, "mass": 0.7, "subject_shape": 0.7, "subject_size": 0.6,
    "target_size": 0.6, "subject_yaw": 0.5, "surface": 0.9, "damping": 0.6, "obstacle": 0.5,
    "obstacle_pos": 0.5,
    "actuation_noise": 0.5, "state_noise": 0.5, "object_scale": 0.4})


def _direction(s: WorldState) -> np.ndarray:
    """Unit (x, y) vector from the object to the target."""
    d = s.position("target")[:2] - s.position("object")[:2]
    return d / max(float(np.linalg.norm(d)), 1e-9)


def _radius(s: WorldState) -> float:
    """The object's footprint radius at any yaw."""
    hx, hy, _ = s.layout.object_half[s.obj("object")]
    return float(math.hypot(hx, hy))


def _push_z(s: WorldState) -> float:
    """Grip-site height while pushing: 1.2 cm above the table, below the mid-height of every object, so the
    fingers cannot ride up over it."""
    return 0.012


def _behind(s: WorldState) -> np.ndarray:
    """The (x, y) point behind the object, on the line from the target through it."""
    return s.position("object")[:2] - _direction(s) * (_radius(s) + BEHIND)


class Push(TaskFamily, name="push"):
    builder = scene
    phase_table = (APPROACH, SLIDE)

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        start: dict[str, np.ndarray] = {}

        def behind(s: WorldState) -> np.ndarray:  # chosen once, so the descent is straight down
            if "xy" not in start:
                start["xy"] = _behind(s)
            return start["xy"]

        def yaw(s: WorldState) -> float:  # fingers closing across the push: the widest face leads
            d = _direction(s)
            return float(math.atan2(d[1], d[0]))

        def ahead(s: WorldState) -> np.ndarray:  # aims below the push height: the contact lifts the hand
            return np.r_[s.position("object")[:2] + _direction(s) * LEAD, _push_z(s) - PRESS]

        def touching(s: WorldState) -> bool:
            return in_contact(s, "object", "target")

        return ScriptedExpert([
            Primitive("approach", lambda s: np.r_[behind(s), HOVER], CLOSE, yaw, tol=0.01),
            Primitive("approach", lambda s: np.r_[behind(s), _push_z(s)], CLOSE, yaw, tol=0.006, speed=0.5),
            Primitive("slide", ahead, CLOSE, yaw, tol=0.0, speed=0.5, max_steps=150, until=touching),
            Primitive("retreat", lambda s: np.r_[s.ee_pos[:2] - _direction(s) * 0.03, HOVER], CLOSE, yaw,
                      tol=0.02),
        ])

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        if goal_reached(s, spec.goal):
            return "done"
        gap = float(np.linalg.norm(s.ee_pos[:2] - s.position("object")[:2])) - _radius(s)
        low = s.ee_pos[2] < _push_z(s) + 0.02
        return "slide" if low and gap < BEHIND + NEAR else "approach"
