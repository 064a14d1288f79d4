"""LIBERO-Goal: put an object where the goal says or open the cabinet's middle drawer, in LIBERO's own world
(`scene.py`). Episodes and validity run in LIBERO (`sim.libero.episode`); the expert is the one
`sim.libero.drawer.expert_for` picks for the goal (pick-place or the drawer), played by the LIBERO episode
runner; seed scenes are every LIBERO family's (`sim.libero.family`).

The phases are pick-place's with the drawer's pull between grasp and lift (`PHASES`): a drawer episode
goes approach → grasp → pull → release, a pick-place one approach → grasp → lift → transport → place →
release, and no phase of one kind follows a phase only the other has, so the furthest phase reached is
where either got stuck. The rules training writer stages only the approach finer here: the one seed
training program serves both kinds of goal (`train.toml`), and the other emphases name an object's height
or a target, which a drawer's handle and level are not."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sim.families.libero_goal import scene
from sim.families.phases import APPROACH, GRASP, LIFT, PLACE, PULL, RELEASE, TRANSPORT
from sim.libero.family import LiberoPickPlaceFamily
from sim.predicates import goal_reached, grasped
from sim.scene import SceneSpec
from sim.world import WorldState

NEAR = 0.03  # grip site this close to the handle counts as "at the handle" (m); the expert reaches ~0.017

# the pull is staged by the seed program's middle stages on a drawer; the cabinet is the task's subject
_PULL = replace(PULL, stages=("lift", "carry"), emphasis=None,
                relevance={**PULL.relevance, "subject_pos": PULL.relevance["fixture_pos"]})
PHASES = (APPROACH, replace(GRASP, emphasis=None), _PULL,
          *(replace(p, emphasis=None) for p in (LIFT, TRANSPORT, PLACE, RELEASE)))


def drawer_phase(s: WorldState, joint: str, success: bool) -> str:
    """A drawer goal's phase, as our articulated family labels one: done once open and let go."""
    held = grasped(s, joint)
    if success:
        return "release" if held else "done"
    if held:
        return "pull"
    return "grasp" if float(np.linalg.norm(s.ee_pos - s.handle(joint))) < NEAR else "approach"


class LiberoGoal(LiberoPickPlaceFamily, name="libero_goal"):
    builder = scene
    phase_table = PHASES

    @classmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        goal = spec.goal[0]
        if goal.fn == "opened":
            return drawer_phase(s, str(goal.args[0]), goal_reached(s, spec.goal))
        return super().phase(spec, s)
