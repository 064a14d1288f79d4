"""Expert plans shared by several families, built from `primitives`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim.experts.primitives import CLOSE, OPEN, Primitive, grasp_yaw
from sim.world import WorldState

CARRY_Z = 0.15  # transport height of the grip site above the table (m)
GRIP_DEPTH = 0.02  # how far below an object's top the finger pads close (m)


def pick_and_place(
    obj: str,
    place_xy: Callable[[WorldState], np.ndarray],
    place_floor: Callable[[WorldState], float],
    carry_z: float = CARRY_Z,
    release_above: float = 0.005,
) -> list[Primitive]:
    """Grasp `obj` from above, carry it at `carry_z`, lower it until its bottom is `release_above` over
    `place_floor` at `place_xy`, open, retreat. Targets follow the object as it moves."""

    def o(s: WorldState) -> np.ndarray:
        return s.obj_pos[s.obj(obj)]

    def half_z(s: WorldState) -> float:
        return float((np.abs(s.obj_mat[s.obj(obj)]) @ s.layout.object_half[s.obj(obj)])[2])

    def grip_z(s: WorldState) -> float:  # grip point below the top, but not below the centre
        return max(0.0, half_z(s) - GRIP_DEPTH)

    yaw_holder: dict[str, float] = {}

    def yaw(s: WorldState) -> float:  # decided once at approach, kept while carrying
        if "yaw" not in yaw_holder or not s.grasp[s.entity(obj)]:
            hx, hy, _ = s.layout.object_half[s.obj(obj)]
            # square footprint: any face will do (fold by 90°); oblong: close across the short side
            sym = np.pi / 2 if abs(hx - hy) < 1e-4 else np.pi
            yaw_holder["yaw"] = grasp_yaw(s.obj_mat[s.obj(obj)], sym) + (
                0.0 if hy <= hx + 1e-4 else np.pi / 2
            )
        return yaw_holder["yaw"]

    def place_z(s: WorldState) -> float:
        return place_floor(s) + release_above + half_z(s) + grip_z(s)

    return [
        Primitive("approach", lambda s: o(s) + [0, 0, max(0.08, half_z(s) + 0.06)], OPEN, yaw, tol=0.01),
        Primitive("approach", lambda s: o(s) + [0, 0, grip_z(s)], OPEN, yaw, tol=0.006, speed=0.5),
        Primitive("grasp", lambda s: o(s) + [0, 0, grip_z(s)], CLOSE, yaw, steps=6),
        Primitive("lift", lambda s: np.r_[s.ee_pos[:2], carry_z], CLOSE, yaw, tol=0.02),
        Primitive("transport", lambda s: np.r_[place_xy(s), carry_z], CLOSE, yaw, tol=0.01),
        Primitive("place", lambda s: np.r_[place_xy(s), place_z(s)], CLOSE, yaw, tol=0.008, speed=0.5),
        Primitive("release", lambda s: s.ee_pos.copy(), OPEN, yaw, steps=5),
        Primitive("retreat", lambda s: np.r_[s.ee_pos[:2], carry_z + 0.05], OPEN, yaw, tol=0.02),
    ]


def pick_place_phase(s: WorldState, obj: str, target_xy: np.ndarray, near: float, success: bool) -> str:
    """Phase labels for any carry-an-object task, from predicates: approach → grasp → lift → transport
    → place → release → done."""
    if success:
        return "done"
    i = s.obj(obj)
    held = bool(s.grasp[s.entity(obj)])
    bottom = s.bounds(obj)[0][2]
    over_target = float(np.linalg.norm(s.obj_pos[i][:2] - target_xy)) < near
    if held:
        if bottom < 0.03 and not over_target:
            return "lift"
        return "place" if over_target else "transport"
    if over_target and bottom > -0.01 and float(np.linalg.norm(s.ee_pos - s.obj_pos[i])) < 0.12:
        return "release"
    return "grasp" if float(np.linalg.norm(s.ee_pos - s.obj_pos[i])) < 0.03 else "approach"
