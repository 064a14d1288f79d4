"""Put-inside: put a graspable object inside a container: an open bin, a LIBERO bowl, or the open drawer
of a cabinet (out of distribution)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.experts.plans import CARRY_Z, GRIP_DEPTH, pick_and_place, pick_place_phase
from sim.experts.primitives import ScriptedExpert
from sim.families.base import COLORS, FAMILIES, FactorDef, FactorValues, TaskFamily
from sim.families.shapes import OBJECT_WORDS, pickable_object
from sim.fixtures import DEFAULTS
from sim.predicates import goal_reached
from sim.scene import FixtureSpec, ObjectSpec, Predicate, SceneSpec
from sim.world import WorldState

TEMPLATES = ("put the {obj} in the {cont}", "place the {obj} inside the {cont}",
             "drop the {obj} into the {cont}")
PARAPHRASES = ("could you stow the {obj} in the {cont}", "the {obj} belongs inside the {cont}",
               "pick up the {obj} and tuck it away in the {cont}")


@dataclass(frozen=True, kw_only=True)
class Bowl:
    """A LIBERO bowl's geometry at scale 1 (measured once by dropping a small ball into it)."""

    asset: str  # LIBERO asset name
    words: str  # what the instruction calls it
    rim: float  # rim height above the bowl's bottom (m)
    inner: float  # radius of the flat inner floor, inside the lowest wall ring (m)
    floor: float  # height of the inner floor above the bowl's bottom (m)
    radius: float  # outer radius (m)
    seat: float  # release height above the bowl's bottom: just over the lowest wall ring (m)
    base_scale: float  # smallest scale whose rim clears the open fingers at release


BOWLS = {
    "black_bowl": Bowl(asset="akita_black_bowl", words="black bowl", rim=0.0505, inner=0.032, floor=0.005,
                       radius=0.0536, seat=0.022, base_scale=1.35),
    "white_bowl": Bowl(asset="white_bowl", words="white bowl", rim=0.0345, inner=0.023, floor=0.0035,
                       radius=0.0406, seat=0.015, base_scale=1.8),
}
BIN_INNER = (0.10, 0.085)  # bin inner half extents (x, y) at container_size 1; long side across the reach
# a wider cabinet than the default, so the open hand (21 cm across the fingers) fits between a drawer's
# side walls when its fingers close along y
CAB_WIDTH = 0.56
CAB = DEFAULTS["cabinet"] | {"width": CAB_WIDTH}
# Where the fully open drawer0 is, relative to the cabinet's origin (see `sim.fixtures._cabinet`). The
# object goes to the middle of the drawer's exposed part, between its front wall and the carcass front,
# so that the hand stays clear of the cabinet's top.
_DRAWER_X = -CAB["travel"] - 0.5 * CAB["wall"]  # the drawer region's centre
_INNER_FRONT = _DRAWER_X - (CAB["depth"] / 2 - CAB["wall"]) + CAB["wall"]  # inner face of its front wall
DRAWER_DX = (_INNER_FRONT - CAB["depth"] / 2) / 2  # centre of the exposed part
DRAWER_SHIFT = DRAWER_DX - _DRAWER_X  # from the region's centre to the exposed part's centre
DRAWER_DY = -(CAB["wall"] / 2 + (CAB["width"] / 2 - 1.5 * CAB["wall"]) / 2)  # drawer0's centre
GAP = 0.02  # least clearance between the object and the container's footprint at the start (m)
HAND_CLEAR = 0.12  # least distance from the object's centre to the cabinet, which is taller than the hand

F = FactorDef
FACTORS = (
    F(name="container", group="task", type="choice", default="bin", choices=("bin", "black_bowl"),
      ood_choices=("drawer", "white_bowl"), doc="the container; OOD an open drawer or another bowl"),
    F(name="template", group="task", type="int", default=0, range=(0, 2), ood_range=(0, 2),
      doc="instruction template; OOD uses paraphrases"),
    F(name="paraphrase", group="task", type="choice", default=False, choices=(False,), ood_choices=(True,),
      doc="use a paraphrased (unseen) instruction"),
    F(name="obj_x", group="spatial", type="float", default=0.05, range=(-0.04, 0.12), ood_range=(-0.1, 0.2)),
    F(name="obj_y", group="spatial", type="float", default=-0.15, range=(-0.2, -0.1),
      ood_range=(-0.27, -0.06)),
    F(name="obj_yaw", group="spatial", type="float", default=0.0, range=(-0.6, 0.6), ood_range=(-1.5, 1.5)),
    F(name="container_x", group="spatial", type="float", default=0.06, range=(0.0, 0.12),
      ood_range=(-0.05, 0.2), doc="x of the container's centre (for a drawer: of its open part)"),
    F(name="container_y", group="spatial", type="float", default=0.14, range=(0.1, 0.18),
      ood_range=(0.04, 0.26), doc="y of the container's centre; pushed to +y if it would overlap the object"),
    F(name="shape", group="attribute", type="choice", default="cube", choices=("cube", "cylinder"),
      ood_choices=("block", "tall_cylinder")),
    F(name="size", group="attribute", type="float", default=0.02, range=(0.018, 0.024),
      ood_range=(0.014, 0.028), doc="half width of the object (m)"),
    F(name="color", group="attribute", type="choice", default="red", choices=("red", "green", "blue"),
      ood_choices=("yellow", "purple", "orange")),
    F(name="mass", group="attribute", type="float", default=0.1, range=(0.05, 0.2), ood_range=(0.05, 0.4)),
    F(name="friction", group="attribute", type="float", default=1.0, range=(0.8, 1.2), ood_range=(0.5, 1.2)),
    F(name="container_color", group="attribute", type="choice", default="blue",
      choices=("blue", "green", "white"), ood_choices=("yellow", "purple", "orange"),
      doc="bin / cabinet colour (bowls keep their texture)"),
    F(name="container_size", group="attribute", type="float", default=1.0, range=(0.95, 1.1),
      ood_range=(0.85, 1.3), doc="bin / bowl scale; a bowl never shrinks below what fits the object"),
)


def _object_dims(o: ObjectSpec) -> tuple[float, float]:
    """(footprint radius at any yaw, half height) of a pickable box or cylinder."""
    if o.kind == "box":
        return math.hypot(o.size[0], o.size[1]), o.size[2]
    return o.size[0], o.size[1]


def bowl_scale(bowl: Bowl, obj: ObjectSpec, size: float) -> float:
    """`size` times the bowl's base scale, raised until the object's footprint fits the inner floor and
    its centre rests at least 8 mm below the rim (so `inside` can hold)."""
    r, hz = _object_dims(obj)
    fit = max((r + 0.004) / bowl.inner, (hz + 0.008) / (bowl.rim - bowl.floor))
    return max(bowl.base_scale * size, fit)


Parts = tuple[tuple[ObjectSpec, ...], tuple[FixtureSpec, ...], str, str]


def _container(v: dict[str, Any], obj: ObjectSpec) -> Parts:
    """The container's objects, fixtures, goal name and instruction words. Its centre is pushed towards
    +y where its footprint would come within `GAP` of the object (a cabinet: within `HAND_CLEAR` of the
    object's centre); in distribution that never happens."""
    kind, size, rgba = v["container"], v["container_size"], COLORS[v["container_color"]]
    if kind in BOWLS:
        bowl = BOWLS[kind]
        scale = bowl_scale(bowl, obj, size)
        reach = bowl.radius * scale
    elif kind == "bin":
        reach = BIN_INNER[1] * size + DEFAULTS["bin"]["wall"]
    else:
        reach = CAB["width"] / 2 + DRAWER_DY  # from the drawer's centre to the cabinet's −y side
    clear = HAND_CLEAR if kind == "drawer" else _object_dims(obj)[0] + GAP
    x, y = v["container_x"], max(v["container_y"], v["obj_y"] + clear + reach)
    if kind in BOWLS:
        o = ObjectSpec(name="bowl", kind="mesh", asset=bowl.asset, category="bowl", size=(scale, 1, 1),
                       mass=0.3, pos=(x, y))
        return (o,), (), "bowl", bowl.words
    if kind == "bin":
        f = FixtureSpec(name="bin", kind="bin", pos=(x, y), rgba=rgba,
                        params={"inner_x": BIN_INNER[0] * size, "inner_y": BIN_INNER[1] * size})
        return (), (f,), "bin", f"{v['container_color']} bin"
    f = FixtureSpec(name="cabinet", kind="cabinet", pos=(x - DRAWER_DX, y - DRAWER_DY), rgba=rgba,
                    params={"width": CAB_WIDTH}, init={"drawer0": 1.0})
    return (), (f,), "cabinet/drawer0", "open drawer"


@FAMILIES.register("put_inside")
class PutInside(TaskFamily):
    name = "put_inside"
    factors = FACTORS
    phases = ("approach", "grasp", "lift", "transport", "place", "release", "done")

    @classmethod
    def make_scene(cls, factors: FactorValues, seed: int = 0) -> SceneSpec:
        v = cls.flat(factors)
        obj = pickable_object("object", v["shape"], v["size"], COLORS[v["color"]], v["mass"], v["friction"],
                              (v["obj_x"], v["obj_y"]), v["obj_yaw"])
        objects, fixtures, goal, cont = _container(v, obj)
        words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[int(v["template"]) % 3]
        text = words.format(obj=f"{v['color']} {OBJECT_WORDS[v['shape']]}", cont=cont)
        return SceneSpec(family=cls.name, instruction=text, objects=(obj, *objects), fixtures=fixtures,
                         seed=seed, goal=(Predicate(fn="inside", args=("object", goal)),), factors=factors,
                         max_steps=250)

    @staticmethod
    def container(spec: SceneSpec) -> str:
        """The goal container: "bin", "bowl" or "cabinet/drawer0"."""
        return str(spec.goal[0].args[1])

    @classmethod
    def target_xy(cls, spec: SceneSpec) -> Callable[[WorldState], np.ndarray]:
        """Where to put the object down: the container's centre (a drawer's: of its part in front of
        the cabinet, so the hand stays clear of the cabinet's top)."""
        c = cls.container(spec)
        shift = np.array([DRAWER_SHIFT, 0.0]) if c.endswith("/drawer0") else np.zeros(2)
        return lambda s: s.position(c)[:2] + shift

    @classmethod
    def _floor_and_rim(cls, spec: SceneSpec) -> tuple[Callable[[WorldState], float], float]:
        """The height to release the object's bottom at, and the container's rim height."""
        c = cls.container(spec)
        if c == "bowl":
            bowl = BOWLS[cls.flat(spec.factors)["container"]]
            scale = spec.object("bowl").size[0]
            return lambda s: float(s.bounds("bowl")[0][2]) + bowl.seat * scale, bowl.rim * scale

        def floor(s: WorldState) -> float:
            return float(s.position(c)[2] - s.layout.region_half[s.layout.regions.index(c)][2])

        return floor, (CAB["height"] if c.endswith("/drawer0") else DEFAULTS["bin"]["height"])

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        floor, rim = cls._floor_and_rim(spec)
        _, hz = _object_dims(spec.object("object"))
        # carry the object's bottom 4 cm over the rim; the grip sits GRIP_DEPTH below its top
        carry = max(CARRY_Z, rim + 0.04 + hz + max(0.0, hz - GRIP_DEPTH))
        plan = pick_and_place("object", place_xy=cls.target_xy(spec), place_floor=floor, carry_z=carry)
        if cls.container(spec).endswith("/drawer0"):
            # turn the fingers to close along y while carrying: only then does the hand fit in the drawer
            for p in plan:
                if p.name in ("transport", "place", "release", "retreat"):
                    p.yaw = 0.0
        return ScriptedExpert(plan)

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        return pick_place_phase(s, "object", cls.target_xy(spec)(s), 0.05, goal_reached(s, spec.goal))

