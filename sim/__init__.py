"""The simulated world: scene specs, the MuJoCo backend, controller, world state, predicates, task
families with experts, validity checks, rendering, episodes.

Light names (the pydantic scene types) import eagerly; everything that pulls in MuJoCo loads on first
use, so that `from sim import SceneSpec` stays cheap (the sandbox relies on that).
"""

from __future__ import annotations

import os
import sys

from common.lazy import lazy_exports
from sim.scene import FACTOR_GROUPS, FixtureSpec, ObjectSpec, Predicate, SceneSpec  # noqa: F401 (re-exported)

_LAZY = {
    "SimEnv": "sim.env", "WorldState": "sim.world", "StateLayout": "sim.world", "build_scene": "sim.builder",
    "PlacementError": "sim.builder", "FAMILIES": "sim.families", "TaskFamily": "sim.families",
    "FactorDef": "sim.factors", "get_family": "sim.families", "Episode": "sim.episode",
    "run_episode": "sim.episode", "ExpertPolicy": "sim.episode", "Observation": "sim.episode",
    "PREDICATES": "sim.predicates", "goal_reached": "sim.predicates", "OSCConfig": "sim.controller",
    "check_scene": "sim.validity", "ValidityReport": "sim.validity", "EpisodePool": "sim.pool",
}


def _headless_gl() -> str | None:
    """EGL when libEGL loads, else OSMesa when libOSMesa loads, else None: MuJoCo's own default (GLFW, which
    needs a display) is then left alone, since MuJoCo fails at import under a backend whose library is
    missing. dlopen only: creating a context would cost time in every process that never renders."""
    import ctypes

    for backend, libs in (("egl", ("libEGL.so.1", "libEGL.so")),
                          ("osmesa", ("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so"))):
        for lib in libs:
            try:
                ctypes.CDLL(lib)
                return backend
            except OSError:
                continue
    return None


# MuJoCo picks its OpenGL backend when first imported and defaults to GLFW, which needs a display; every
# MuJoCo-using sim module is imported through this package, so the headless default is set here
# (`sim.render` also reads it when it makes a context, so importing mujoco first is fine too).
if sys.platform.startswith("linux") and not os.environ.get("MUJOCO_GL") and (_gl := _headless_gl()):
    os.environ["MUJOCO_GL"] = _gl

__all__, __getattr__ = lazy_exports(
    __name__, _LAZY, eager=("FACTOR_GROUPS", "FixtureSpec", "ObjectSpec", "Predicate", "SceneSpec"))
