"""Stack and insert: put block A on block B, or push a square peg into the hole of a fixed hole block.

Both tasks carry one piece onto a target with the shared pick-and-place plan; the expert then turns
the piece square to the target, hovers just above it ("align") and lowers it slowly ("place" on a
block, "insert" into the hole) before letting go.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sim.experts.plans import pick_and_place
from sim.experts.primitives import CLOSE, Primitive, ScriptedExpert, ee_yaw
from sim.families.base import TaskFamily
from sim.families.phases import ALIGN, APPROACH, GRASP, INSERT, LIFT, PLACE, RELEASE, TRANSPORT
from sim.families.stack_insert import scene
from sim.families.stack_insert.scene import BASE, HOLE, PEG, PIECE
from sim.predicates import goal_reached, grasped
from sim.scene import SceneSpec
from sim.world import WorldState

ALIGN_GAP = 0.012  # piece bottom above the target's top while hovering to align (m)
NEAR = 0.03  # piece centre within this of the target centre (xy) counts as "over the target" (m)


def _wrap_quarter(a: float) -> float:
    """Fold an angle into [−π/4, π/4): square things look the same every quarter turn."""
    return (a + math.pi / 4) % (math.pi / 2) - math.pi / 4


def _yaw_of(mat: np.ndarray) -> float:
    return math.atan2(mat[1, 0], mat[0, 0])


def _roles(spec: SceneSpec) -> tuple[str, str]:
    """(piece, target) names: the target is block B or the hole region."""
    return (PEG, HOLE) if any(o.name == PEG for o in spec.objects) else (PIECE, BASE)


def target_top(s: WorldState, target: str) -> float:
    """Height of the target's top face: block B's top, or the hole block's top rim."""
    if target in s.layout.regions:
        r = s.layout.regions.index(target)
        return float(s.region_pos[r][2] + s.layout.region_half[r][2])
    return float(s.bounds(target)[1][2])


def target_yaw(s: WorldState, target: str) -> float:
    """Yaw of block B or of the hole (the hole block's frame)."""
    if target in s.layout.regions:
        return _yaw_of(s.region_mat[s.layout.regions.index(target)])
    return _yaw_of(s.obj_mat[s.obj(target)])


def insert_depth(s: WorldState, piece: str) -> float:
    """How deep the expert pushes the peg before letting go: as deep as it can while the fingertips
    (gripping 2 cm below the peg's top, pads reaching 5 mm lower) stay 8 mm above the rim."""
    half_z = float(s.layout.object_half[s.obj(piece)][2])
    return float(np.clip(2 * half_z - 0.02 - 0.005 - 0.008, 0.016, 0.03))


class StackInsert(TaskFamily, name="stack_insert"):
    builder = scene
    phase_table = (APPROACH, GRASP, LIFT, TRANSPORT, ALIGN, PLACE, INSERT, RELEASE)

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        piece, target = _roles(spec)
        insert = target == HOLE

        def xy(s: WorldState) -> np.ndarray:
            return s.position(target)[:2].copy()

        def floor(s: WorldState) -> float:
            return target_top(s, target) - (insert_depth(s, piece) if insert else 0.0)

        plan = pick_and_place(piece, place_xy=xy, place_floor=floor)
        held_yaw: dict[str, float] = {}

        def yaw(s: WorldState) -> float:  # square the held piece to the target; frozen once released
            if grasped(s, piece) or "yaw" not in held_yaw:
                turn = _wrap_quarter(target_yaw(s, target) - _yaw_of(s.obj_mat[s.obj(piece)]))
                held_yaw["yaw"] = ee_yaw(s) + turn
            return held_yaw["yaw"]

        def hover(s: WorldState) -> np.ndarray:  # piece bottom ALIGN_GAP above the top, measured live
            dz = target_top(s, target) + ALIGN_GAP - float(s.bounds(piece)[0][2])
            return np.r_[xy(s), s.ee_pos[2] + dz]

        pick, transport, place, release, retreat = plan[:4], plan[4], plan[5], plan[6], plan[7]
        return ScriptedExpert([
            *pick,  # approach, approach, grasp, lift
            replace(transport, yaw=yaw),
            Primitive("align", hover, CLOSE, yaw, tol=0.003, speed=0.35, max_steps=60),
            replace(place, name="insert" if insert else "place", yaw=yaw, speed=0.25, tol=0.005),
            replace(release, yaw=yaw),
            replace(retreat, yaw=yaw),
        ])

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        piece, target = _roles(spec)
        held = grasped(s, piece)
        if goal_reached(s, spec.goal) and not held:
            return "done"
        c = s.obj_pos[s.obj(piece)]
        over = float(np.linalg.norm(c[:2] - s.position(target)[:2])) < NEAR
        gap = float(s.bounds(piece)[0][2]) - target_top(s, target)
        if held:
            if over and gap < ALIGN_GAP - 0.004:  # below the hover height: on the way down
                return "insert" if target == HOLE else "place"
            if over and gap < 0.04:
                return "align"
            return "lift" if s.bounds(piece)[0][2] < 0.03 and not over else "transport"
        near_ee = float(np.linalg.norm(s.ee_pos - c))
        if over and gap > -0.06 and near_ee < 0.12:
            return "release"
        return "grasp" if near_ee < 0.03 else "approach"
