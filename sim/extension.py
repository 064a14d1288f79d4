"""The extended factor space (issue #39 item 4): factors beyond a family's own schema that any of our
MuJoCo families' scenes can vary — distractors, obstacles and clutter placed around the task, the task
objects' scale, mass and damping, the table, the arm's start, actuation noise and noise on the state the
policy reads. A run chooses the family's own schema (`core`) or this one added to it (`extended`,
`RunConfig.space`).

The extension's seed distribution is the core scene: each factor that changes the scene (a count, the
arm's start, noise, gains, scales, the table) has its in-distribution range at its default, so a policy
trained on the core space's seed scenes is in distribution here, and generators, variants and the `ood`
splits move these factors only into their out-of-distribution part (`ood_range`). The factors that shape
what a count adds (a distractor's size, an obstacle's gap) keep ranges: they move nothing while the count is
0. (Until FINDINGS #47 the seed distribution held up to 2 distractors, an obstacle, 3 clutter discs and
mild noise: the core-trained policy solved 2 % of it and SFT on it learned neither space.)

Declared once, here, and applied to any family's core scene by `extend`: a family's extended seed program
is its scene builder's text with this schema added to its `FACTORS` literal and `generate` wrapping the
core one (`programs.seeds.extended_source`), and `TaskFamily.make_scene` does the same in process. Every
default leaves the core scene as it was (no extra objects, scale 1, no `conditions`), so an extended
program drawing defaults builds the core scene. This module is in the sandbox-clean subset (numpy, math,
`sim.scene`): generation programs import `EXTENSION` and `extend` from it in the sandbox.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from sim.scene import Conditions, ObjectSpec, SceneSpec, factor_values, grouped

Space = Literal["core", "extended"]
SPACES: tuple[Space, ...] = ("core", "extended")

EXTENSION = (
    {"name": "distractor_count", "group": "task", "type": "int", "default": 0, "range": (0.0, 0.0),
     "ood_range": (0.0, 4.0), "kind": "distractor", "hard_side": 1,
     "doc": "objects on the table the instruction does not name"},
    {"name": "obstacle_count", "group": "task", "type": "int", "default": 0, "range": (0.0, 0.0),
     "ood_range": (0.0, 2.0), "kind": "obstacle", "hard_side": 1,
     "doc": "heavy blocks standing beside the way from the object to its destination"},
    {"name": "clutter_count", "group": "task", "type": "int", "default": 0, "range": (0.0, 0.0),
     "ood_range": (0.0, 6.0), "kind": "clutter", "hard_side": 1,
     "doc": "flat discs scattered over the free table"},
    {"name": "distractor_dist", "group": "spatial", "type": "float", "default": 0.15, "range": (0.1, 0.2),
     "ood_range": (0.03, 0.25), "kind": "distractor_pos", "hard_side": -1,
     "doc": "gap (m) between each distractor and the object the task moves (or the fixture it works), "
            "the nearest free one to it"},
    {"name": "distractor_yaw", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.8, 0.8),
     "ood_range": (-1.6, 1.6), "kind": "distractor_pos"},
    {"name": "obstacle_gap", "group": "spatial", "type": "float", "default": 0.13, "range": (0.11, 0.16),
     "ood_range": (0.0, 0.2), "kind": "obstacle_pos", "hard_side": -1,
     "doc": "distance (m) of an obstacle from the middle of the task's way, sideways"},
    {"name": "table_height", "group": "spatial", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (-0.08, 0.08), "kind": "table_height",
     "doc": "height (m) of the table top relative to the arm's base, from the usual"},
    {"name": "ee_x", "group": "spatial", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (-0.12, 0.12), "kind": "arm_init", "doc": "the gripper's start moved along x (m)"},
    {"name": "ee_y", "group": "spatial", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (-0.12, 0.12), "kind": "arm_init", "doc": "the gripper's start moved along y (m)"},
    {"name": "ee_z", "group": "spatial", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (-0.1, 0.1), "kind": "arm_init", "doc": "the gripper's start moved along z (m)"},
    {"name": "gripper_init", "group": "spatial", "type": "float", "default": 1.0, "range": (1.0, 1.0),
     "ood_range": (0.0, 1.0), "kind": "arm_init", "hard_side": -1,
     "doc": "the fingers' opening at the start (1: fully open)"},
    {"name": "distractor_kind", "group": "attribute", "type": "choice", "default": "cube",
     "choices": ("cube", "cylinder"), "ood_choices": ("twin", "sphere"), "kind": "distractor",
     "doc": "shape of the distractors; twin: the shape and size of the object the task moves"},
    {"name": "distractor_size", "group": "attribute", "type": "float", "default": 0.02,
     "range": (0.016, 0.024), "ood_range": (0.012, 0.032), "kind": "distractor",
     "doc": "half width of a distractor (m)"},
    {"name": "distractor_color", "group": "attribute", "type": "choice", "default": "white",
     "choices": ("white", "black"), "ood_choices": ("match",), "kind": "distractor",
     "doc": "colour of the distractors; match: the colour of the object the task moves"},
    {"name": "distractor_mass", "group": "attribute", "type": "float", "default": 0.1, "range": (0.05, 0.2),
     "ood_range": (0.02, 1.0), "kind": "distractor"},
    {"name": "obstacle_height", "group": "attribute", "type": "float", "default": 0.025,
     "range": (0.015, 0.03), "ood_range": (0.015, 0.06), "kind": "obstacle", "hard_side": 1,
     "doc": "half height of an obstacle (m)"},
    {"name": "obstacle_width", "group": "attribute", "type": "float", "default": 0.02,
     "range": (0.015, 0.025), "ood_range": (0.01, 0.04), "kind": "obstacle", "hard_side": 1,
     "doc": "half width of an obstacle (m)"},
    {"name": "clutter_size", "group": "attribute", "type": "float", "default": 0.012, "range": (0.01, 0.015),
     "ood_range": (0.008, 0.025), "kind": "clutter", "doc": "radius of a clutter disc (m)"},
    {"name": "object_scale", "group": "attribute", "type": "float", "default": 1.0, "range": (1.0, 1.0),
     "ood_range": (0.8, 1.25), "kind": "object_scale",
     "doc": "scale of the object the task moves (its size as the family made it, times this)"},
    {"name": "mass_scale", "group": "attribute", "type": "float", "default": 1.0, "range": (1.0, 1.0),
     "ood_range": (0.5, 3.0), "kind": "mass", "hard_side": 1, "doc": "every task object's mass times this"},
    {"name": "damping", "group": "attribute", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (0.0, 1.0), "kind": "damping", "hard_side": 1,
     "doc": "damping of every object's free joint (N·s/m, N·m·s/rad)"},
    {"name": "table_friction", "group": "attribute", "type": "float", "default": 1.0, "range": (1.0, 1.0),
     "ood_range": (0.3, 1.6), "kind": "surface", "doc": "sliding friction of the table top"},
    {"name": "table_color", "group": "attribute", "type": "choice", "default": "wood", "choices": ("wood",),
     "ood_choices": ("white", "dark"), "kind": "appearance"},
    {"name": "action_noise", "group": "attribute", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (0.0, 0.15), "kind": "actuation_noise", "hard_side": 1,
     "doc": "std of Gaussian noise on each normalised Δposition/Δrotation action"},
    {"name": "action_gain", "group": "attribute", "type": "float", "default": 1.0, "range": (1.0, 1.0),
     "ood_range": (0.6, 1.4), "kind": "actuation_noise", "doc": "gain on the Δposition/Δrotation actions"},
    {"name": "obs_noise", "group": "attribute", "type": "float", "default": 0.0, "range": (0.0, 0.0),
     "ood_range": (0.0, 0.02), "kind": "state_noise", "hard_side": 1,
     "doc": "std (m) of Gaussian noise on the positions the policy reads"},
    {"name": "obs_delay", "group": "attribute", "type": "int", "default": 0, "range": (0.0, 0.0),
     "ood_range": (0.0, 5.0), "kind": "state_noise", "hard_side": 1, "doc": "steps the state read lags"},
)
EXTENSION_NAMES = frozenset(f["name"] for f in EXTENSION)
# the counts: the factors that add objects to a scene (distractors, obstacles, clutter)
ADDED_COUNTS = frozenset(f["name"] for f in EXTENSION if f["name"].endswith("_count"))
# The most entities the extension adds to one scene: every count factor at its OOD high (4 + 2 + 6).
MOST_ADDED = int(sum(f["ood_range"][1] for f in EXTENSION if f["name"] in ADDED_COUNTS))
# Object tokens a policy must take in the extended space: our families' own entities (at most 5 in the
# 800 scenes of the first extended suites: put_inside's) with room, and the most the extension adds. The
# object-token policy's default (16) is too few: an `ood` scene of put_inside holds 17.
EXTENDED_MAX_OBJECTS = 8 + MOST_ADDED


def kind_group(kind: str) -> str:
    """An extension factor's kind with placement folded into what it places (`distractor_pos` →
    `distractor`): the groups the studies read success by."""
    return kind.removesuffix("_pos")

COLORS = {"white": (0.92, 0.92, 0.92, 1), "black": (0.1, 0.1, 0.1, 1)}
TABLE_COLORS = {"wood": None, "white": (0.93, 0.93, 0.9, 1), "dark": (0.25, 0.2, 0.17, 1)}
# where extra objects may stand: (xmin, xmax, ymin, ymax) of the table frame, and their distance from the
# robot base (validity's workspace is 0.25–0.85 m), so every one of them is on the table and in reach
AREA = (-0.22, 0.32, -0.45, 0.45)
BASE_XY = (-0.56, 0.0)
REACH = (0.32, 0.8)
CLEAR = 0.03  # m kept between an extra object's bound and any other
# the gripper's usual start (x, y) and the keep-out half extents of fixtures beyond their bodies (a drawer's
# travel and handle in front of a cabinet, a door's swing), conservative for every size a family draws
EE_START = (-0.1, 0.0)
FIXTURE_REACH = {"cabinet": 0.25, "door": 0.3, "bin": 0.02, "hole_block": 0.01}
PRIMITIVE = ("box", "cylinder", "sphere")


def extend(core: Any, schema: Any, rng: np.random.Generator, factors: dict) -> SceneSpec:
    """The scene of `core(rng, **factors)` (a family's own `generate`, given only its own factors) with the
    extended factors of `schema` (the program's `FACTORS`: the family's and `EXTENSION`) applied. Extra
    objects are drawn with `rng` after the core scene, so the core scene is the same either way."""
    values = factor_values(schema, factors)
    spec = core(rng, **{k: v for k, v in factors.items() if k not in EXTENSION_NAMES})
    subject = _subject(spec)
    objects = [_task_object(o, o.name == subject, values) for o in spec.objects]
    taken = [_bound(o) for o in objects] + [_fixture_bound(f) for f in spec.fixtures]
    anchor, way = _anchor(spec, subject, taken)
    extra = []
    for i in range(int(values["obstacle_count"])):
        side = 1.0 if i % 2 == 0 else -1.0
        half = math.hypot(values["obstacle_width"], values["obstacle_width"])
        pos = _beside(rng, taken, way, float(values["obstacle_gap"]) * side, half)
        extra.append(ObjectSpec(name=f"obstacle{i}", kind="box", category="block", mass=2.0, pos=pos,
                                size=(values["obstacle_width"], values["obstacle_width"],
                                      values["obstacle_height"]), rgba=(0.45, 0.47, 0.5, 1)))
        taken.append(_bound(extra[-1]))
    for i in range(int(values["distractor_count"])):
        o = _distractor(f"distractor{i}", values, spec.object(subject) if subject else None)
        pos = _spot(rng, taken, anchor, float(values["distractor_dist"]), _bound(o)[2])
        extra.append(o.model_copy(update={"pos": pos}))
        taken.append(_bound(extra[-1]))
    for i in range(int(values["clutter_count"])):
        pos = _spot(rng, taken, None, 0.0, float(values["clutter_size"]))
        extra.append(ObjectSpec(name=f"clutter{i}", kind="cylinder", category="disc", mass=0.01, pos=pos,
                                size=(values["clutter_size"], 0.004, 0.0), rgba=(0.6, 0.55, 0.5, 1)))
        taken.append(_bound(extra[-1]))
    cond = _conditions(values)
    return SceneSpec.model_validate({**dict(spec), "objects": (*objects, *extra),
                                     "factors": grouped(schema, values),
                                     "conditions": None if cond == Conditions() else cond})


def _subject(spec: SceneSpec) -> str | None:
    """The object the goal moves (its first argument), None when the goal works a fixture."""
    names = {o.name for o in spec.objects}
    first = spec.goal[0].args[0]
    return first if first in names else None


def _task_object(o: ObjectSpec, subject: bool, values: dict) -> ObjectSpec:
    """A core object with its mass scaled, and the subject's size scaled."""
    update: dict = {"mass": o.mass * values["mass_scale"]}
    if subject:
        s = values["object_scale"]
        update["size"] = (o.size[0] * s, o.size[1] * s, o.size[2] * s) if o.kind in PRIMITIVE else \
            (o.size[0] * s, o.size[1], o.size[2])
    if update["mass"] == o.mass and update.get("size", o.size) == o.size:
        return o
    return o.model_copy(update=update)


def _distractor(name: str, values: dict, subject: ObjectSpec | None) -> ObjectSpec:
    """A distractor as the factors say, at the origin until it is placed."""
    pos = (0.0, 0.0)
    size, shape = float(values["distractor_size"]), values["distractor_kind"]
    rgba = COLORS.get(values["distractor_color"], COLORS["white"])
    if values["distractor_color"] == "match" and subject is not None:
        rgba = subject.rgba
    if shape == "twin" and subject is not None and subject.kind in PRIMITIVE:
        return ObjectSpec(name=name, kind=subject.kind, category=subject.category, size=subject.size,
                          rgba=rgba, mass=values["distractor_mass"], pos=pos, yaw=values["distractor_yaw"])
    shapes = {"cylinder": ("cylinder", (size, size, 0.0), "can"),
              "sphere": ("sphere", (size, 0.0, 0.0), "ball")}
    kind, dims, word = shapes.get(shape, ("box", (size,) * 3, "cube"))
    return ObjectSpec(name=name, kind=kind, category=word, size=dims, rgba=rgba,
                      mass=values["distractor_mass"], pos=pos, yaw=values["distractor_yaw"])


def _bound(o: ObjectSpec) -> tuple:
    """(x, y, half x, half y) an object keeps others out of: a square around its yaw-free bound."""
    if o.kind == "mesh":
        r = 0.075 * o.size[0]
    elif o.kind == "box":
        r = math.hypot(o.size[0], o.size[1])
    else:
        r = o.size[0]
    x, y = o.pos if o.pos is not None else ((o.region[0] + o.region[1]) / 2, (o.region[2] + o.region[3]) / 2)
    return (x, y, r, r)


def _fixture_bound(f: Any) -> tuple:
    """A fixture's keep-out box: its body's extent from its params, and what moves out of its front (which
    faces the robot, turned by its yaw)."""
    p = f.params
    reach = FIXTURE_REACH.get(f.kind, 0.1)
    hx = (max(p.get("depth", 0.0), 2 * p.get("inner_x", 0.0), p.get("outer", 0.0), 0.2) + reach) / 2
    hy = max(p.get("width", 0.0), 2 * p.get("inner_y", 0.0), p.get("outer", 0.0), 0.2) / 2
    c, s = abs(math.cos(f.yaw)), abs(math.sin(f.yaw))
    x, y = f.pos[0] - reach / 2 * math.cos(f.yaw), f.pos[1] - reach / 2 * math.sin(f.yaw)
    return (x, y, c * hx + s * hy, s * hx + c * hy)


def _anchor(spec: SceneSpec, subject: str | None, taken: list) -> tuple:
    """The bound distractors are placed around (the subject's, else the first fixture's), and the task's
    way: from the subject to the goal's destination, or from the gripper's start to the fixture."""
    if subject is not None:
        start = spec.object(subject).pos
        dest = spec.goal[0].args[1] if len(spec.goal[0].args) > 1 else None
        names = {o.name: o for o in spec.objects}
        fixtures = {f.name: f for f in spec.fixtures}
        if isinstance(dest, str) and dest.split("/")[0] in names:
            end = names[dest.split("/")[0]].pos
        elif isinstance(dest, str) and dest.split("/")[0] in fixtures:
            end = fixtures[dest.split("/")[0]].pos
        else:
            end = start
        return taken[[o.name for o in spec.objects].index(subject)], (start, end)
    return taken[len(spec.objects)], (EE_START, spec.fixtures[0].pos)


def _free(p: tuple, half: float, taken: list) -> bool:
    x, y = p
    if not (AREA[0] + half <= x <= AREA[1] - half and AREA[2] + half <= y <= AREA[3] - half):
        return False
    if not REACH[0] <= math.hypot(x - BASE_XY[0], y - BASE_XY[1]) <= REACH[1]:
        return False
    return all(abs(x - tx) > half + hx + CLEAR or abs(y - ty) > half + hy + CLEAR for tx, ty, hx, hy in taken)


def _spot(rng: np.random.Generator, taken: list, anchor: Any, gap: float, half: float) -> tuple:
    """A free spot whose bound (`half`) is `gap` from the `anchor` bound (each try at a random bearing; the
    gap moves 1 cm further from the asked one, alternately out and in, every eight tries), or anywhere free
    on the table without an anchor; ValueError when there is none."""
    for k in range(240):
        if anchor is None:
            p = (float(rng.uniform(AREA[0], AREA[1])), float(rng.uniform(AREA[2], AREA[3])))
        else:
            step = (k // 8 + 1) // 2 * (1 if (k // 8) % 2 else -1)
            g = max(gap + 0.01 * step, CLEAR + 0.001)
            a = float(rng.uniform(-math.pi, math.pi))
            ax, ay, hx, hy = anchor
            p = (ax + (hx + g + half) * math.cos(a), ay + (hy + g + half) * math.sin(a))
        if _free(p, half, taken):
            return (round(p[0], 5), round(p[1], 5))
    raise ValueError(f"no free spot on the table for an extra object (bound {half:.3f} m) "
                     f"{'near ' + str(anchor) if anchor is not None else ''}")


def _beside(rng: np.random.Generator, taken: list, way: tuple, gap: float, half: float) -> tuple:
    """A free spot `gap` sideways from the middle of `way` (sliding along it when the middle is taken, then
    further out, then on the other side)."""
    (x0, y0), (x1, y1) = way
    n = math.hypot(x1 - x0, y1 - y0)
    ux, uy = ((x1 - x0) / n, (y1 - y0) / n) if n > 1e-6 else (1.0, 0.0)
    for k in range(400):
        t = 0.5 + float(rng.uniform(-0.3, 0.3)) * min(k % 200, 1)
        side = math.copysign(1.0, gap) * (1 if k < 200 else -1)
        g = side * (abs(gap) + 0.02 * ((k % 200) // 10))
        p = (x0 + t * (x1 - x0) - uy * g, y0 + t * (y1 - y0) + ux * g)
        if _free(p, half, taken):
            return (round(p[0], 5), round(p[1], 5))
    raise ValueError(f"no free spot for an obstacle {gap:.3f} m beside the way {way}")


def _conditions(values: dict) -> Conditions:
    return Conditions(table_height=values["table_height"], table_friction=values["table_friction"],
                      table_rgba=TABLE_COLORS[values["table_color"]],
                      ee_offset=(values["ee_x"], values["ee_y"], values["ee_z"]),
                      gripper=values["gripper_init"], damping=values["damping"],
                      action_noise=values["action_noise"], action_gain=values["action_gain"],
                      obs_noise=values["obs_noise"], obs_delay=int(values["obs_delay"]))
