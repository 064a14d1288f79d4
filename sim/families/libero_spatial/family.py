"""LIBERO-Spatial: put the black bowl the words pick out on the plate, in LIBERO's own world
(`scene.py`). Episodes and validity run in LIBERO (`sim.libero.episode`); the expert is LIBERO's scripted
pick-place over privileged state (`sim.libero.expert.PickPlaceExpert`), played by the LIBERO episode
runner."""

from __future__ import annotations

from sim.experts.plans import pick_place_phase
from sim.experts.primitives import ScriptedExpert
from sim.families.base import FAMILIES, TaskFamily, factor_schema
from sim.families.libero_spatial import scene
from sim.predicates import goal_reached
from sim.scene import SceneSpec
from sim.world import WorldState


@FAMILIES.register("libero_spatial")
class LiberoSpatial(TaskFamily):
    name = "libero_spatial"
    builder = scene
    factors = factor_schema(scene.FACTORS)
    phases = ("approach", "grasp", "lift", "transport", "place", "release", "done")
    phase_stages = {"approach": ("reach",), "grasp": ("grasp",), "lift": ("lift",),
                    "transport": ("carry",), "place": None, "release": None}
    seed_count = len(scene.TASKS)  # one seed scene per task
    world = "libero"

    @classmethod
    def seed_scenes(cls) -> list[SceneSpec]:
        """Every task of the family once, in distribution (the plate in its own region, the file's words)."""
        return [cls.make_scene({"task": {"task": t}}, 1000 + i) for i, t in enumerate(scene.TASKS)]

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        raise NotImplementedError("a LIBERO scene's expert acts in LIBERO: run it with "
                                  "sim.episode.run_episode (policy None), which plays "
                                  "sim.libero.expert.PickPlaceExpert")

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        bowl, plate = (str(a) for a in spec.goal[0].args)
        return pick_place_phase(s, bowl, s.position(plate)[:2], 0.05, goal_reached(s, spec.goal))
