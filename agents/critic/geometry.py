"""The privileged numbers the critic reads in one state of a failed episode: distances, heights, grasp,
contacts, gripper opening, yaw misalignment and reach, for a carry-an-object task (`carry_numbers`) or an
articulated one (`joint_numbers`). `top`/`bottom` are the training-program language's own read-outs, so
the critic and the training programs measure heights alike.
"""

from __future__ import annotations

import math

import numpy as np

from programs.vocab import bottom, top
from sim.builder import ROBOT_BASE
from sim.experts.primitives import ee_yaw, grasp_yaw
from sim.scene import SceneSpec
from sim.world import WorldState


def reach(p: np.ndarray) -> float:
    """Horizontal distance from the robot's base (m): the arm's stretch."""
    return float(np.hypot(p[0] - ROBOT_BASE[0], p[1] - ROBOT_BASE[1]))


def contact(s: WorldState, a: str, b: str) -> bool:
    """Whether entities `a` and `b` touch (False for names the state does not know)."""
    try:
        return bool(s.contacts[s.entity(a), s.entity(b)])
    except KeyError:
        return False


def width_across_fingers(s: WorldState, scene: SceneSpec, obj: str) -> float:
    """How wide the object is along the finger-closing axis (m): what the fingers must span."""
    if scene.object_kind(obj) in ("cylinder", "sphere"):
        return 2.0 * scene.object(obj).size[0]
    i = s.obj(obj)
    axis = s.ee_mat[:, 0]
    return float(2.0 * np.abs(axis @ s.obj_mat[i]) @ s.layout.object_half[i])


def yaw_misalignment(s: WorldState, scene: SceneSpec, obj: str) -> float:
    """Angle between the gripper's yaw and the nearest yaw that closes squarely across a box (rad, ≥ 0)."""
    if scene.object_kind(obj) != "box":
        return 0.0
    d = grasp_yaw(s.obj_mat[s.obj(obj)]) - ee_yaw(s)
    return abs((d + math.pi / 4) % (math.pi / 2) - math.pi / 4)


def _yaw(mat: np.ndarray) -> float:
    return math.atan2(mat[1, 0], mat[0, 0])


def yaw_between(s: WorldState, obj: str, target: str) -> float:
    """Turn between the object's and the target's square faces (rad, folded to [0, π/4])."""
    if target in s.layout.regions:
        tm = s.region_mat[s.layout.regions.index(target)]
    elif target in s.layout.objects:
        tm = s.obj_mat[s.obj(target)]
    else:
        return 0.0
    d = _yaw(s.obj_mat[s.obj(obj)]) - _yaw(tm)
    return abs((d + math.pi / 4) % (math.pi / 2) - math.pi / 4)


def carry_numbers(s: WorldState, s0: WorldState, scene: SceneSpec, obj: str, target: str) -> dict[str, float]:
    """Key numbers of a carry-an-object task in one state."""
    o, t = s.position(obj), s.position(target)
    return {
        "ee_to_object": float(np.linalg.norm(s.ee_pos - o)),
        "ee_to_object_xy": float(np.linalg.norm(s.ee_pos[:2] - o[:2])),
        "object_bottom": bottom(s, obj),
        "object_to_target_xy": float(np.linalg.norm(o[:2] - t[:2])),
        "object_above_target_top": bottom(s, obj) - top(s, target),
        "object_moved_xy": float(np.linalg.norm(o[:2] - s0.position(obj)[:2])),
        "gripper_opening": float(s.gripper),
        "object_width_across_fingers": width_across_fingers(s, scene, obj),
        "yaw_misalignment": yaw_misalignment(s, scene, obj),
        "grasped": float(bool(s.grasp[s.entity(obj)])),
        "robot_touches_object": float(contact(s, "robot", obj)),
        "object_touches_target": float(contact(s, obj, target)),
        "ee_reach": reach(s.ee_pos),
        "object_reach": reach(o),
        "target_reach": reach(t),
    } | ({"yaw_to_target": yaw_between(s, obj, target)} if square_target(scene, target) else {})


def square_target(scene: SceneSpec, target: str) -> bool:
    """Whether the object must be squared to the target (a block to stack on, a square hole)."""
    objects = {o.name: o for o in scene.objects}
    if target in objects:
        return objects[target].kind == "box"
    return any(f.name == target.split("/")[0] and f.kind == "hole_block" for f in scene.fixtures)


def joint_numbers(s: WorldState, s0: WorldState, joint: str) -> dict[str, float]:
    """Key numbers of an articulated task in one state."""
    j = s.joint(joint)
    lo, hi = s.layout.joint_range[j]
    frac = float((s.joint_q[j] - lo) / max(hi - lo, 1e-9))
    frac0 = float((s0.joint_q[j] - lo) / max(hi - lo, 1e-9))
    h = s.handle(joint)
    return {
        "ee_to_handle": float(np.linalg.norm(s.ee_pos - h)),
        "open_fraction": frac,
        "open_fraction_change": frac - frac0,
        "gripper_opening": float(s.gripper),
        "grasped": float(bool(s.grasp[s.entity(joint)])),
        "robot_touches_fixture": float(contact(s, "robot", joint)),
        "ee_reach": reach(s.ee_pos),
        "handle_reach": reach(h),
        "handle_height": float(h[2]),
    }
