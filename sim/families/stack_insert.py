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
from sim.families.base import COLORS, FAMILIES, FactorDef, FactorValues, TaskFamily
from sim.families.shapes import pickable_object
from sim.predicates import goal_reached, grasped
from sim.scene import FixtureSpec, ObjectSpec, Predicate, SceneSpec
from sim.world import WorldState

PIECE, BASE, PEG, HOLE = "block_a", "block_b", "peg", "holeblock"
# the base block / hole block wear colours no piece can have, so an instruction never names two alike
BASE_COLORS = {"white": COLORS["white"], "gray": (0.5, 0.5, 0.52, 1), "brown": (0.55, 0.4, 0.3, 1),
               "black": COLORS["black"], "cyan": (0.2, 0.75, 0.8, 1), "pink": (0.95, 0.55, 0.7, 1)}
TEMPLATES = {
    "stack": ("put the {a} block on the {b} block", "stack the {a} block on top of the {b} block",
              "place the {a} block onto the {b} block"),
    "insert": ("insert the {a} peg into the hole of the {b} block", "put the {a} peg in the {b} block's hole",
               "place the {a} peg into the {b} hole block"),
}
PARAPHRASES = {
    "stack": ("could you set the {a} block on top of the {b} one", "the {b} block needs the {a} block on it",
              "build a small tower with the {a} block above the {b} block"),
    "insert": ("could you slot the {a} peg into the {b} block", "the hole in the {b} block needs the {a} peg",
               "fit the {a} peg down into the square opening of the {b} block"),
}
HOLE_HEIGHT = 0.05  # hole block height (m); the hole goes through, so a dropped peg lands on the table
BASE_MASS = 0.3  # kg; heavier than any piece so that placing on it does not shove it
ALIGN_GAP = 0.012  # piece bottom above the target's top while hovering to align (m)
NEAR = 0.03  # piece centre within this of the target centre (xy) counts as "over the target" (m)

F = FactorDef
FACTORS = (
    F(name="task", group="task", type="choice", default="stack", choices=("stack", "insert"),
      doc="stack block A on block B, or insert the peg into the hole block"),
    F(name="template", group="task", type="int", default=0, range=(0, 2), ood_range=(0, 2),
      doc="instruction template; OOD uses paraphrases"),
    F(name="paraphrase", group="task", type="choice", default=False, choices=(False,), ood_choices=(True,),
      doc="use a paraphrased (unseen) instruction"),
    # OOD reach: past x ≈ 0.2 at |y| ≈ 0.26 the elbow (joint 4) hits its limit and the OSC stalls there
    F(name="piece_x", group="spatial", type="float", default=0.05, range=(-0.02, 0.12),
      ood_range=(-0.05, 0.18)),
    F(name="piece_y", group="spatial", type="float", default=-0.12, range=(-0.2, -0.07),
      ood_range=(-0.26, -0.05), doc="the piece (block A / peg) starts on the robot's right"),
    F(name="piece_yaw", group="spatial", type="float", default=0.0, range=(-0.6, 0.6), ood_range=(-1.5, 1.5)),
    F(name="base_x", group="spatial", type="float", default=0.05, range=(-0.02, 0.12),
      ood_range=(-0.05, 0.18)),
    F(name="base_y", group="spatial", type="float", default=0.12, range=(0.07, 0.2), ood_range=(0.05, 0.26),
      doc="block B / the hole block stands on the robot's left"),
    F(name="base_yaw", group="spatial", type="float", default=0.0, range=(-0.3, 0.3), ood_range=(-0.7, 0.7)),
    F(name="block_size", group="attribute", type="float", default=0.02, range=(0.018, 0.022),
      ood_range=(0.015, 0.026), doc="half width of block A (m)"),
    F(name="base_size", group="attribute", type="float", default=0.027, range=(0.025, 0.03),
      ood_range=(0.021, 0.035), doc="half width of block B (m)"),
    F(name="peg_size", group="attribute", type="float", default=0.0125, range=(0.012, 0.013),
      ood_range=(0.011, 0.014), doc="half width of the peg (m); its height is 5.2× this"),
    F(name="hole", group="attribute", type="float", default=0.034, range=(0.033, 0.035),
      ood_range=(0.030, 0.037), doc="hole width (m): OOD includes tighter clearance"),
    F(name="color", group="attribute", type="choice", default="red", choices=("red", "green", "blue"),
      ood_choices=("yellow", "purple", "orange"), doc="colour of the piece"),
    F(name="base_color", group="attribute", type="choice", default="white",
      choices=("white", "gray", "brown"), ood_choices=("black", "cyan", "pink"),
      doc="colour of block B / the hole block"),
    F(name="mass", group="attribute", type="float", default=0.1, range=(0.05, 0.2), ood_range=(0.05, 0.4)),
    F(name="friction", group="attribute", type="float", default=1.0, range=(0.8, 1.2), ood_range=(0.5, 1.2)),
)


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


@FAMILIES.register("stack_insert")
class StackInsert(TaskFamily):
    name = "stack_insert"
    factors = FACTORS
    phases = ("approach", "grasp", "lift", "transport", "align", "place", "insert", "release", "done")

    @classmethod
    def make_scene(cls, factors: FactorValues, seed: int = 0) -> SceneSpec:
        v = cls.flat(factors)
        pos, base_pos = (v["piece_x"], v["piece_y"]), (v["base_x"], v["base_y"])
        objects: tuple[ObjectSpec, ...]
        fixtures: tuple[FixtureSpec, ...] = ()
        if v["task"] == "stack":
            a = pickable_object(PIECE, "cube", v["block_size"], COLORS[v["color"]], v["mass"], v["friction"],
                                pos, v["piece_yaw"])
            b = pickable_object(BASE, "cube", v["base_size"], BASE_COLORS[v["base_color"]], BASE_MASS,
                                v["friction"], base_pos, v["base_yaw"])
            objects, goal = (a, b), Predicate(fn="stacked", args=(PIECE, BASE))
        else:
            peg = pickable_object(PEG, "peg", v["peg_size"], COLORS[v["color"]], v["mass"], v["friction"],
                                  pos, v["piece_yaw"])
            hole = FixtureSpec(name=HOLE, kind="hole_block", pos=base_pos, yaw=v["base_yaw"],
                               rgba=BASE_COLORS[v["base_color"]],
                               params={"hole": v["hole"], "outer": 0.1, "height": HOLE_HEIGHT})
            objects, fixtures, goal = (peg,), (hole,), Predicate(fn="inserted", args=(PEG, HOLE))
        words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[v["task"]][int(v["template"]) % 3]
        text = words.format(a=v["color"], b=v["base_color"])
        return SceneSpec(family=cls.name, instruction=text, objects=objects, fixtures=fixtures, seed=seed,
                         goal=(goal,), factors=factors, max_steps=200)

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
