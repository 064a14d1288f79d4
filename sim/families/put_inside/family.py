"""Put-inside: put a graspable object inside a container: an open bin, a LIBERO bowl, or the open drawer
of a cabinet (out of distribution)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.experts.plans import CARRY_Z, GRIP_DEPTH, pick_and_place, pick_place_phase
from sim.experts.primitives import ScriptedExpert
from sim.families.base import TaskFamily
from sim.families.phases import PICK_AND_PLACE
from sim.families.put_inside import scene
from sim.fixtures import DEFAULTS
from sim.predicates import goal_reached
from sim.scene import ObjectSpec, SceneSpec
from sim.world import WorldState


@dataclass(frozen=True, kw_only=True)
class Bowl:
    """A LIBERO bowl's geometry at scale 1 (measured once by dropping a small ball into it)."""

    key: str  # the `container` choice naming it (a key of `scene.BOWLS`)
    asset: str  # LIBERO asset name
    words: str  # what the instruction calls it
    rim: float  # rim height above the bowl's bottom (m)
    inner: float  # radius of the flat inner floor, inside the lowest wall ring (m)
    floor: float  # height of the inner floor above the bowl's bottom (m)
    radius: float  # outer radius (m)
    seat: float  # release height above the bowl's bottom: just over the lowest wall ring (m)
    base_scale: float  # smallest scale whose rim clears the open fingers at release


SEATS = {"black_bowl": 0.022, "white_bowl": 0.015}  # release height above each bowl's bottom at scale 1 (m)
# the scene builder's bowl table (asset, words, rim, inner, floor, radius, base scale) with the seat heights
BOWLS = {key: Bowl(key=key, asset=a, words=w, rim=rim, inner=inner, floor=floor, radius=radius,
                   seat=SEATS[key], base_scale=base)
         for key, (a, w, rim, inner, floor, radius, base) in scene.BOWLS.items()}
CAB = DEFAULTS["cabinet"] | {"width": scene.CAB_WIDTH}  # the wide cabinet of the drawer case
# from the open drawer region's centre to the centre of its exposed part (where the object goes)
DRAWER_SHIFT = scene.DRAWER_DX - scene._DRAWER_X


def bowl_scale(bowl: Bowl, obj: ObjectSpec, size: float) -> float:
    """The scale the scene builder gives `bowl` for `obj` at container size `size`: the bowl's base scale
    times `size`, raised until the object's footprint fits the inner floor and its centre rests at least
    8 mm below the rim (so `inside` can hold)."""
    return scene._bowl_scale(scene.BOWLS[bowl.key], obj, size)


class PutInside(TaskFamily, name="put_inside"):
    builder = scene
    phase_table = PICK_AND_PLACE

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
        _, hz = scene._dims(spec.object("object"))
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

