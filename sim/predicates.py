"""Pure predicate functions over a `WorldState`. Goals, phase labels and training programs use them.

Thresholds are module constants so that a reader can see exactly what "on" or "inside" means.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sim.world import WorldState

ON_Z_TOL = 0.025  # a's bottom within this of b's top (m)
# a's bottom may sit this far below b's bottom (m), a's centre still above b's: LIBERO's collision boxes of
# nested meshes put a bowl resting in a plate ~2.4 mm below the plate's own box bottom (libero_spatial,
# where LIBERO's goal check holds)
ON_Z_BELOW = 0.005
# a's body origin above a region's top, as LIBERO's `(On obj region)` checks it (`SiteObject.under`), m
ON_REGION_BELOW, ON_REGION_ABOVE = 0.005, 0.10
XY_MARGIN = 0.9  # a's centre within this share of b's half extent
LIFT_DEFAULT = 0.05  # "lifted" height above the table (m)
INSERT_DEPTH = 0.015  # peg bottom at least this far below the hole's top (m)
OPENED = 0.75  # open fraction counted as opened
CLOSED = 0.1  # open fraction counted as closed


def in_contact(s: WorldState, a: str, b: str) -> bool:
    return bool(s.contacts[s.entity(a), s.entity(b)])


def grasped(s: WorldState, a: str) -> bool:
    """Both finger pads touch `a` (an object, or a fixture whose handle is held)."""
    return bool(s.grasp[s.entity(a)])


def dist(s: WorldState, a: str, b: str) -> float:
    return float(np.linalg.norm(s.position(a) - s.position(b)))


def lifted(s: WorldState, a: str, h: float = LIFT_DEFAULT) -> bool:
    return bool(s.bounds(a)[0][2] >= h)


def on(s: WorldState, a: str, b: str) -> bool:
    """`a` rests on top of object `b`: centred over it, bottom at b's top, touching it, not held. On a region
    `b` (a fixture's top or a stove's cook region, LIBERO's `(On obj region)`): LIBERO's own test, a's body
    origin over the region's rectangle and less than `ON_REGION_ABOVE` above its top, and not held."""
    if grasped(s, a):
        return False
    if b in s.layout.regions and b not in s.layout.objects:
        i, r = s.obj(a), s.layout.regions.index(b)
        origin = s.obj_pos[i] - s.obj_mat[i] @ s.layout.object_center[i]
        local, half = s.region_mat[r].T @ (origin - s.region_pos[r]), s.layout.region_half[r]
        level = half[2] - ON_REGION_BELOW < local[2] < half[2] + ON_REGION_ABOVE
        return bool(level and np.all(np.abs(local[:2]) < half[:2]))
    alo, _ = s.bounds(a)
    blo, bhi = s.bounds(b)
    c, bc = s.obj_pos[s.obj(a)], (blo + bhi) / 2
    within = np.all(np.abs(c[:2] - bc[:2]) <= XY_MARGIN * (bhi[:2] - blo[:2]) / 2)
    level = blo[2] - ON_Z_BELOW <= alo[2] <= bhi[2] + ON_Z_TOL and c[2] > bc[2]
    return bool(within and level and in_contact(s, a, b))


def stacked(s: WorldState, a: str, b: str) -> bool:
    """`a` on `b` with its centre over b's central half (a tidy stack, not a lean)."""
    if not on(s, a, b):
        return False
    blo, bhi = s.bounds(b)
    off = np.abs(s.obj_pos[s.obj(a)][:2] - (blo[:2] + bhi[:2]) / 2)
    return bool(np.all(off <= 0.5 * (bhi[:2] - blo[:2]) / 2 + 0.01))


def _region_local(s: WorldState, a: str, region: str) -> tuple[np.ndarray, np.ndarray]:
    r = s.layout.regions.index(region)
    local = s.region_mat[r].T @ (s.obj_pos[s.obj(a)] - s.region_pos[r])
    return local, s.layout.region_half[r]


def inside(s: WorldState, a: str, b: str) -> bool:
    """`a`'s centre inside container `b` (a fixture region such as a bin or drawer, or a bowl/basket
    object), below its rim, and not held."""
    if grasped(s, a):
        return False
    if b in s.layout.regions:
        local, half = _region_local(s, a, b)
        return bool(np.all(np.abs(local[:2]) <= half[:2]) and -half[2] - 0.01 <= local[2] <= half[2])
    blo, bhi = s.bounds(b)
    c = s.obj_pos[s.obj(a)]
    bc, bh = (blo + bhi) / 2, (bhi - blo) / 2
    return bool(np.all(np.abs(c[:2] - bc[:2]) <= 0.8 * bh[:2]) and blo[2] <= c[2] <= bhi[2])


def inserted(s: WorldState, a: str, hole: str) -> bool:
    """Peg `a` is in hole region `hole`: centred in it, its bottom below the hole's top, and let go."""
    if grasped(s, a):
        return False
    local, half = _region_local(s, a, hole)
    alo, _ = s.bounds(a)
    r = s.layout.regions.index(hole)
    top = s.region_pos[r][2] + half[2]
    return bool(np.all(np.abs(local[:2]) <= half[:2]) and alo[2] <= top - INSERT_DEPTH)


def open_frac(s: WorldState, j: str) -> float:
    i = s.joint(j)
    lo, hi = s.layout.joint_range[i]
    return float(np.clip((s.joint_q[i] - lo) / (hi - lo), 0.0, 1.0))


def opened(s: WorldState, j: str, frac: float = OPENED) -> bool:
    return open_frac(s, j) >= frac


def closed(s: WorldState, j: str, frac: float = CLOSED) -> bool:
    return open_frac(s, j) <= frac


PREDICATES: dict[str, Callable[..., bool | float]] = {
    "on": on,
    "inside": inside,
    "open_frac": open_frac,
    "opened": opened,
    "closed": closed,
    "stacked": stacked,
    "inserted": inserted,
    "grasped": grasped,
    "lifted": lifted,
    "dist": dist,
    "in_contact": in_contact,
}


def evaluate(s: WorldState, fn: str, args: Sequence[str | float]) -> bool | float:
    return PREDICATES[fn](s, *args)


def goal_reached(s: WorldState, goal: Sequence) -> bool:
    """All goal predicates (`sim.scene.Predicate`s) hold."""
    return all(bool(evaluate(s, p.fn, p.args)) for p in goal)
