"""Pick-place: put object A onto target B (a plate). The scene itself is built by `scene.py`."""

from __future__ import annotations

from sim.experts.plans import pick_and_place, pick_place_phase
from sim.experts.primitives import ScriptedExpert
from sim.families.base import TaskFamily
from sim.families.phases import PICK_AND_PLACE
from sim.families.pick_place import scene
from sim.predicates import goal_reached
from sim.scene import SceneSpec
from sim.world import WorldState


class PickPlace(TaskFamily, name="pick_place"):
    builder = scene
    phase_table = PICK_AND_PLACE

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
