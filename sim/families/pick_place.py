"""Pick-place: put object A onto target B (a plate)."""

from __future__ import annotations

import numpy as np

from sim.experts.plans import pick_and_place, pick_place_phase
from sim.experts.primitives import ScriptedExpert
from sim.families.base import COLORS, FAMILIES, FactorDef, FactorValues, TaskFamily
from sim.families.shapes import OBJECT_WORDS, pickable_object
from sim.predicates import goal_reached
from sim.scene import ObjectSpec, Predicate, SceneSpec
from sim.world import WorldState

TEMPLATES = (
    "put the {obj} on the {tgt}",
    "place the {obj} onto the {tgt}",
    "pick up the {obj} and set it on the {tgt}",
)
PARAPHRASES = (
    "could you move the {obj} so it sits on the {tgt}",
    "the {tgt} needs the {obj} on it",
    "grab the {obj}, then leave it resting on top of the {tgt}",
)
TARGETS = {"plate": ("plate", 1.0), "yellow_plate": ("yellow_plate", 1.0), "big_plate": ("plate", 1.25)}

F = FactorDef
# fmt: off
FACTORS = (
    F(name="target", group="task", type="choice", default="plate", choices=("plate",),
      ood_choices=("yellow_plate", "big_plate"), doc="destination object"),
    F(name="template", group="task", type="int", default=0, range=(0, 2), ood_range=(0, 2),
      doc="instruction template; OOD uses paraphrases"),
    F(name="paraphrase", group="task", type="choice", default=False, choices=(False,), ood_choices=(True,),
      doc="use a paraphrased (unseen) instruction"),
    F(name="obj_x", group="spatial", type="float", default=0.05, range=(-0.04, 0.12), ood_range=(-0.1, 0.2)),
    F(name="obj_y", group="spatial", type="float", default=-0.12, range=(-0.2, -0.06),
      ood_range=(-0.28, -0.02)),
    F(name="target_x", group="spatial", type="float", default=0.05, range=(-0.04, 0.12),
      ood_range=(-0.1, 0.2)),
    F(name="target_y", group="spatial", type="float", default=0.12, range=(0.06, 0.2), ood_range=(0.0, 0.28),
      doc="target y; pushed further +y when it would overlap the object (only happens out of distribution)"),
    F(name="obj_yaw", group="spatial", type="float", default=0.0, range=(-0.6, 0.6), ood_range=(-1.5, 1.5)),
    F(name="shape", group="attribute", type="choice", default="cube", choices=("cube", "cylinder"),
      ood_choices=("block", "tall_cylinder")),
    F(name="size", group="attribute", type="float", default=0.02, range=(0.018, 0.024),
      ood_range=(0.014, 0.028), doc="half width of the object (m)"),
    F(name="color", group="attribute", type="choice", default="red", choices=("red", "green", "blue"),
      ood_choices=("yellow", "purple", "orange")),
    F(name="mass", group="attribute", type="float", default=0.1, range=(0.05, 0.2), ood_range=(0.05, 0.4)),
    F(name="friction", group="attribute", type="float", default=1.0, range=(0.8, 1.2), ood_range=(0.5, 1.2)),
)
# fmt: on


PLATE_RADIUS = 0.069  # LIBERO plate at scale 1 (m)


def _separate(obj_xy, obj: ObjectSpec, target_xy, target_radius: float) -> tuple[float, float]:
    """Push the target along +y until it clears the object by 2 cm. In distribution the y ranges never
    overlap; out of distribution they may, and a scene that starts with the object inside the plate is
    no scene at all (the validity check would reject it as interpenetration)."""
    r_obj = float(np.hypot(obj.size[0], obj.size[1] if obj.kind == "box" else obj.size[0]))
    need = r_obj + target_radius + 0.02
    dx = target_xy[0] - obj_xy[0]
    dy_min = float(np.sqrt(max(need**2 - dx**2, 0.0)))
    ty = max(target_xy[1], obj_xy[1] + dy_min)
    return float(target_xy[0]), float(ty)


@FAMILIES.register("pick_place")
class PickPlace(TaskFamily):
    name = "pick_place"
    factors = FACTORS
    phases = ("approach", "grasp", "lift", "transport", "place", "release", "done")

    @classmethod
    def make_scene(cls, factors: FactorValues, seed: int = 0) -> SceneSpec:
        v = cls.flat(factors)
        obj = pickable_object(
            "object",
            v["shape"],
            v["size"],
            COLORS[v["color"]],
            v["mass"],
            v["friction"],
            (v["obj_x"], v["obj_y"]),
            v["obj_yaw"],
        )
        asset, scale = TARGETS[v["target"]]
        tx, ty = _separate(
            (v["obj_x"], v["obj_y"]), obj, (v["target_x"], v["target_y"]), PLATE_RADIUS * scale
        )
        tgt = ObjectSpec(
            name="target",
            kind="mesh",
            asset=asset,
            category="plate",
            size=(scale, 1, 1),
            mass=0.3,
            pos=(tx, ty),
        )
        words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[int(v["template"]) % 3]
        text = words.format(obj=f"{v['color']} {OBJECT_WORDS[v['shape']]}", tgt=v["target"].replace("_", " "))
        return SceneSpec(
            family=cls.name,
            instruction=text,
            objects=(obj, tgt),
            seed=seed,
            goal=(Predicate(fn="on", args=("object", "target")),),
            factors=factors,
            max_steps=200,
        )

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        return ScriptedExpert(
            pick_and_place(
                "object",
                place_xy=lambda s: s.position("target")[:2].copy(),
                place_floor=lambda s: float(s.bounds("target")[0][2]) + 0.012,
            )
        )

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        return pick_place_phase(s, "object", s.position("target")[:2], 0.05, goal_reached(s, spec.goal))
