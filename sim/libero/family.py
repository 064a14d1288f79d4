"""What every LIBERO family shares (`sim/families/libero_object/`, `sim/families/libero_spatial/`,
`sim/families/libero_goal/`): scenes that name a task of the family's suite (`SceneSpec.libero`), one seed
scene per task of its scene builder's `TASKS`, pick-place phases read from the goal `(obj, target)`
(libero_goal adds a drawer's), and the expert played in LIBERO."""

from __future__ import annotations

from typing import Any

from sim.experts.plans import pick_place_phase
from sim.experts.primitives import ScriptedExpert
from sim.families.base import TaskFamily
from sim.families.phases import PICK_AND_PLACE
from sim.predicates import goal_reached
from sim.scene import SceneSpec
from sim.world import WorldState


class LiberoPickPlaceFamily(TaskFamily):
    """A family in LIBERO's world whose goal carries an object to a target; subclasses set `name` and
    `builder` (with its `TASKS`: one seed scene per task)."""

    phase_table = PICK_AND_PLACE
    world = "libero"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "builder" in cls.__dict__:
            cls.seed_count = len(cls.builder.TASKS)

    @classmethod
    def seed_scenes(cls) -> list[SceneSpec]:
        """Every task of the family once, in distribution (the task file's own layout and words)."""
        return [cls.make_scene({"task": {"task": t}}, 1000 + i) for i, t in enumerate(cls.builder.TASKS)]

    @classmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        raise NotImplementedError("a LIBERO scene's expert acts in LIBERO: run it with "
                                  "sim.episode.run_episode (policy None), which plays the expert "
                                  "sim.libero.drawer.expert_for picks for the task's goal")

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        obj, target = (str(a) for a in spec.goal[0].args)
        return pick_place_phase(s, obj, s.position(target)[:2], 0.05, goal_reached(s, spec.goal))
