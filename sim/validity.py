"""Scene validity in any world: `check_scene` checks a scene in its own world (its family's, `sim.worlds`):
ours compiles it, checks overlaps, settling and reach and lets the expert solve it (`sim.mujoco_validity`),
LIBERO's builds it and lets the expert solve it (`sim.libero.episode`). Each failure names what is wrong in
plain words; a solved scene's report keeps the expert's episode as a demonstration.
"""

from __future__ import annotations

from sim.mujoco_validity import CHECKS, ValidityConfig
from sim.records import Reason, ValidityReport
from sim.scene import SceneSpec
from sim.worlds import world_of

__all__ = ["CHECKS", "Reason", "ValidityConfig", "ValidityReport", "check_scene"]


def check_scene(spec: SceneSpec, *, solve: bool = True,
                config: ValidityConfig | None = None) -> ValidityReport:
    """The scene's validity in its world, the checks run in order up to the first failure (solvability, the
    expert's episode, only when `solve`); `config` holds our world's tolerances (LIBERO's takes none)."""
    return world_of(spec).check_scene(spec, solve=solve, config=config)
