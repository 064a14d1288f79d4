"""Fixtures built from primitives with `mujoco.MjSpec`: a cabinet with two sliding drawers, a cabinet
with a hinged door, an open bin, and a block with a square hole (for peg insertion).

Every fixture faces the robot: at yaw 0 its front is at −x. Dimensions come from `FixtureSpec.params`
with the defaults below. Each builder returns the articulated joints (name → range) and the interior
regions (name → body-local box) that `WorldState` exposes to predicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from sim.scene import FixtureSpec


@dataclass(frozen=True)
class Region:
    """An axis-aligned box in a body's frame: an interior (bin, drawer) or a hole."""

    body: str
    center: tuple[float, float, float]
    half: tuple[float, float, float]


@dataclass(frozen=True)
class FixtureParts:
    joints: dict[str, tuple[float, float]]  # full joint name → (lo, hi)
    regions: dict[str, Region]  # region name (e.g. "cabinet/drawer0") → box
    handles: dict[str, str]  # joint name → handle geom name (the bar a gripper grasps)


DEFAULTS: dict[str, dict[str, float]] = {
    # two drawers side by side; handles on the top edge of each drawer front, grasped from above.
    # handle_drop: bar centre below the top; ≤ ~0.022 so the Panda hand (3 cm above its grip site,
    # ±10 cm along the finger axis) clears the carcass top, ≥ 0.018 so the posts pass under it
    "cabinet": {
        "width": 0.44,
        "depth": 0.28,
        "height": 0.16,
        "travel": 0.16,
        "wall": 0.01,
        "handle_standoff": 0.045,
        "handle_drop": 0.02,
    },
    # hinged door; hinge on the robot's right (−y) edge, opens towards the robot
    "door": {
        "width": 0.26,
        "depth": 0.22,
        "height": 0.16,
        "wall": 0.01,
        "handle_standoff": 0.045,
        "handle_inset": 0.06,
        "handle_drop": 0.02,
        "handle_length": 0.09,
    },
    "bin": {"inner_x": 0.09, "inner_y": 0.12, "height": 0.07, "wall": 0.008},
    "hole_block": {"hole": 0.034, "outer": 0.10, "height": 0.05},
}


def params(f: FixtureSpec) -> dict[str, float]:
    p = dict(DEFAULTS[f.kind])
    unknown = set(f.params) - set(p)
    if unknown:
        raise ValueError(
            f"fixture {f.name!r} ({f.kind}): unknown params {sorted(unknown)}; known: {sorted(p)}"
        )
    p.update(f.params)
    return p


def _box(body: mujoco.MjsBody, name: str, pos, half, rgba, **kw) -> mujoco.MjsGeom:
    return body.add_geom(
        name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(pos), size=list(half), rgba=list(rgba), **kw
    )


def _yaw_quat(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def _handle(body, name, x, y, z, length, standoff, rgba) -> None:
    """A horizontal bar along y at height z, `standoff` in front (−x) of the face at `x`, on two posts."""
    r = 0.008
    _box(
        body, name, (x - standoff, y, z), (r, length / 2, r), (0.2, 0.2, 0.2, 1), friction=[1.5, 0.01, 0.001]
    )
    for s in (-1, 1):
        _box(
            body,
            f"{name}_post{'ab'[s > 0]}",
            (x - standoff / 2, y + s * (length / 2 - r), z),
            (standoff / 2, r, r),
            rgba,
        )


def build_fixture(world: mujoco.MjsBody, f: FixtureSpec) -> FixtureParts:
    p = params(f)
    root = world.add_body(name=f.name, pos=[f.pos[0], f.pos[1], 0.0], quat=_yaw_quat(f.yaw))
    return {"cabinet": _cabinet, "door": _door, "bin": _bin, "hole_block": _hole_block}[f.kind](root, f, p)


def _open_box(body, prefix, cx, hx, hy, h, w, rgba, front=True, top=False) -> None:
    """Walls of a box open at the top (and optionally at the front)."""
    _box(body, f"{prefix}_bottom", (cx, 0, w / 2), (hx, hy, w / 2), rgba)
    _box(body, f"{prefix}_back", (cx + hx - w / 2, 0, h / 2), (w / 2, hy, h / 2), rgba)
    for s, tag in ((-1, "r"), (1, "l")):
        _box(body, f"{prefix}_side_{tag}", (cx, s * (hy - w / 2), h / 2), (hx, w / 2, h / 2), rgba)
    if front:
        _box(body, f"{prefix}_front", (cx - hx + w / 2, 0, h / 2), (w / 2, hy, h / 2), rgba)
    if top:
        _box(body, f"{prefix}_top", (cx, 0, h - w / 2), (hx, hy, w / 2), rgba)


def _cabinet(root, f: FixtureSpec, p) -> FixtureParts:
    W, D, H, w = p["width"], p["depth"], p["height"], p["wall"]
    rgba = f.rgba
    # carcass: bottom, top, back, two sides, a divider; open front
    _box(root, f"{f.name}_bottom", (0, 0, w / 2), (D / 2, W / 2, w / 2), rgba)
    _box(root, f"{f.name}_top", (0, 0, H - w / 2), (D / 2, W / 2, w / 2), rgba)
    _box(root, f"{f.name}_back", (D / 2 - w / 2, 0, H / 2), (w / 2, W / 2, H / 2), rgba)
    for s, tag in ((-1, "r"), (1, "l")):
        _box(root, f"{f.name}_side_{tag}", (0, s * (W / 2 - w / 2), H / 2), (D / 2, w / 2, H / 2), rgba)
    _box(root, f"{f.name}_divider", (0, 0, H / 2), (D / 2, w / 2, H / 2), rgba)
    joints, regions, handles = {}, {}, {}
    slot = W / 2 - 1.5 * w  # inner width of one drawer slot
    dh = H - 2 * w - 0.006  # drawer height, with clearance
    lighter = tuple(min(1.0, c * 1.25) for c in rgba[:3]) + (1.0,)
    for i, ys in enumerate((-1, 1)):  # drawer0 on the robot's right, drawer1 on its left
        name = f"{f.name}/drawer{i}"
        yc = ys * (w / 2 + slot / 2)
        d = root.add_body(name=name, pos=[0.0, yc, w + 0.003])
        d.add_joint(
            name=name,
            type=mujoco.mjtJoint.mjJNT_SLIDE,
            axis=[-1, 0, 0],
            range=[0, p["travel"]],
            damping=8.0,
            frictionloss=0.3,
            armature=0.05,
        )
        hx, hy = D / 2 - w, slot / 2 - 0.003
        _open_box(d, f"{f.name}_drawer{i}", -0.5 * w, hx, hy, dh, w, lighter)
        front_x = -0.5 * w - hx
        bar_z = H - p["handle_drop"] - (w + 0.003)  # in the drawer's frame
        _handle(
            d,
            f"{f.name}_drawer{i}_handle",
            front_x,
            0.0,
            bar_z,
            min(0.1, slot * 0.6),
            p["handle_standoff"],
            (0.3, 0.3, 0.3, 1),
        )
        joints[name] = (0.0, p["travel"])
        regions[name] = Region(name, (-0.5 * w, 0.0, (dh + w) / 2), (hx - w, hy - w, (dh - w) / 2))
        handles[name] = f"{f.name}_drawer{i}_handle"
    return FixtureParts(joints, regions, handles)


def _door(root, f: FixtureSpec, p) -> FixtureParts:
    W, D, H, w = p["width"], p["depth"], p["height"], p["wall"]
    rgba = f.rgba
    _open_box(root, f.name, 0.0, D / 2, W / 2, H, w, rgba, front=False, top=True)
    hinge_y = -W / 2
    name = f"{f.name}/door"
    door = root.add_body(name=name, pos=[-D / 2 - w / 2 - 0.002, hinge_y, 0.0])
    door.add_joint(
        name=name,
        type=mujoco.mjtJoint.mjJNT_HINGE,
        axis=[0, 0, 1],
        range=[0, math.pi / 2],
        damping=0.5,
        frictionloss=0.05,
        armature=0.01,
    )
    lighter = tuple(min(1.0, c * 1.25) for c in rgba[:3]) + (1.0,)
    _box(
        door,
        f"{f.name}_door_panel",
        (0, W / 2, H / 2 + 0.002),
        (w / 2, W / 2 - 0.002, H / 2 - 0.002),
        lighter,
    )
    hy = W - p["handle_inset"]
    _handle(
        door,
        f"{f.name}_door_handle",
        -w / 2,
        hy,
        H - p["handle_drop"],
        p["handle_length"],
        p["handle_standoff"],
        (0.3, 0.3, 0.3, 1),
    )
    regions = {f.name: Region(f.name, (0.0, 0.0, H / 2), (D / 2 - w, W / 2 - w, H / 2 - w))}
    return FixtureParts({name: (0.0, math.pi / 2)}, regions, {name: f"{f.name}_door_handle"})


def _bin(root, f: FixtureSpec, p) -> FixtureParts:
    ix, iy, H, w = p["inner_x"], p["inner_y"], p["height"], p["wall"]
    _open_box(root, f.name, 0.0, ix + w, iy + w, H, w, f.rgba)
    return FixtureParts({}, {f.name: Region(f.name, (0.0, 0.0, (H + w) / 2), (ix, iy, (H - w) / 2))}, {})


def _hole_block(root, f: FixtureSpec, p) -> FixtureParts:
    hole, outer, H = p["hole"], p["outer"], p["height"]
    side = (outer - hole) / 2
    off = hole / 2 + side / 2
    for tag, pos, half in (
        ("n", (off, 0, H / 2), (side / 2, outer / 2, H / 2)),
        ("s", (-off, 0, H / 2), (side / 2, outer / 2, H / 2)),
        ("e", (0, off, H / 2), (hole / 2, side / 2, H / 2)),
        ("w", (0, -off, H / 2), (hole / 2, side / 2, H / 2)),
    ):
        _box(root, f"{f.name}_{tag}", pos, half, f.rgba)
    return FixtureParts({}, {f.name: Region(f.name, (0.0, 0.0, H / 2), (hole / 2, hole / 2, H / 2))}, {})


def fixture_footprint(f: FixtureSpec) -> np.ndarray:
    """Half extents (x, y) of the fixture's footprint in the table frame (its yaw ignored: a bound)."""
    p = params(f)
    if f.kind == "cabinet":
        hx, hy = p["depth"] / 2 + p["travel"] + p["handle_standoff"], p["width"] / 2
    elif f.kind == "door":
        hx, hy = p["depth"] / 2 + p["width"], p["width"] / 2
    elif f.kind == "bin":
        hx, hy = p["inner_x"] + p["wall"], p["inner_y"] + p["wall"]
    else:
        hx = hy = p["outer"] / 2
    r = math.hypot(hx, hy) if f.yaw else 0.0
    return np.array([max(hx, r), max(hy, r)]) if f.yaw else np.array([hx, hy])
