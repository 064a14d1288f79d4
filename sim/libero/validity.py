"""Is a LIBERO scene we wrote a valid one? Build its environment from the written BDDL and let the scripted
expert solve starts that LIBERO samples from it — the same test our own scenes pass (`sim.validity`: the
expert solves the scene)."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from sim.libero.scene import LiberoScene


@dataclass(frozen=True)
class LiberoValidity:
    """The expert's result on each sampled start (seed → solved), and why a scene could not be tried."""

    solved: dict[int, bool] = field(default_factory=dict)
    error: str | None = None
    wall_s: float = 0.0

    @property
    def valid(self) -> bool:
        return self.error is None and bool(self.solved) and all(self.solved.values())


def check(scene: LiberoScene, *, starts: int = 2, seed: int = 0, max_steps: int = 300) -> LiberoValidity:
    """Write the scene, build its environment, and run the expert from `starts` sampled starts (seeds
    seed, seed + 1, ...); a scene LIBERO cannot build, or whose goal the expert does not know, is invalid
    with the reason."""
    from sim.libero.drawer import expert_for
    from sim.libero.env import LiberoEnv
    from sim.libero.expert import UnsupportedGoal

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="coda-libero-scene-") as tmp:
        path = scene.write(Path(tmp) / "scene.bddl")
        try:
            env = LiberoEnv(path, name="scene")
        except (KeyError, ValueError, AssertionError) as e:  # LIBERO's errors for a problem it cannot
            # build (an unknown object or fixture category is a KeyError); anything else is a bug and raises
            return LiberoValidity(error=f"LIBERO could not build the scene: {type(e).__name__}: {e}",
                                  wall_s=time.perf_counter() - t0)
        solved: dict[int, bool] = {}
        try:
            for s in range(seed, seed + starts):
                env.reset(seed=s)
                try:
                    expert = expert_for(env)
                except UnsupportedGoal as e:
                    return LiberoValidity(error=str(e), wall_s=time.perf_counter() - t0)
                while env.steps < max_steps and not env.success():
                    env.step(expert.act())
                solved[s] = env.success()
        finally:
            env.close()
    return LiberoValidity(solved=solved, wall_s=time.perf_counter() - t0)
