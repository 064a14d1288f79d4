"""The simulated world: scene specs, the MuJoCo backend, controller, world state, predicates, task
families with experts, validity checks, rendering, episodes.

Light names (the pydantic scene types) import eagerly; everything that pulls in MuJoCo loads on first
use, so that `from sim import SceneSpec` stays cheap (the sandbox relies on that).
"""

from __future__ import annotations

import importlib
from typing import Any

from sim.scene import FACTOR_GROUPS, FixtureSpec, ObjectSpec, Predicate, SceneSpec

_LAZY = {
    "SimEnv": "sim.env", "WorldState": "sim.world", "StateLayout": "sim.world", "build_scene": "sim.builder",
    "PlacementError": "sim.builder", "FAMILIES": "sim.families", "TaskFamily": "sim.families",
    "FactorDef": "sim.families", "get_family": "sim.families", "Episode": "sim.episode",
    "run_episode": "sim.episode", "ExpertPolicy": "sim.episode", "Observation": "sim.episode",
    "PREDICATES": "sim.predicates", "goal_reached": "sim.predicates", "OSCConfig": "sim.controller",
    "check_scene": "sim.validity", "ValidityReport": "sim.validity", "EpisodePool": "sim.pool",
}

__all__ = ["FACTOR_GROUPS", "FixtureSpec", "ObjectSpec", "Predicate", "SceneSpec", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sim' has no attribute {name!r}")
