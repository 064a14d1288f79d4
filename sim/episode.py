"""Episodes in any world: `run_episode` runs one in the scene's own world (its family's, `sim.worlds`),
and the record types every world gives back (`sim.records`) are importable from here too.

A policy is any callable `policy(obs) -> action chunk` (array (h, 7) or (7,)); the runner executes the
chunk open-loop, then asks again. `obs` is an `Observation`: the instruction, the privileged
`WorldState`, a flat proprio vector, and camera frames when the policy asks for them (our world renders a
policy's `cameras` at its `image_size`). Scripted experts are wrapped by `ExpertPolicy` in our world.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.env import SETTLE_STEPS
from sim.mujoco_episode import ExpertPolicy
from sim.records import BatchPolicy, Episode, Observation, Policy, make_observation, proprio
from sim.scene import SceneSpec
from sim.worlds import world_of

__all__ = ["SETTLE_STEPS", "BatchPolicy", "Episode", "ExpertPolicy", "Observation", "Policy", "batch_world",
           "make_observation", "proprio", "run_episode", "run_episodes"]


def run_episode(spec: SceneSpec, policy: Policy | None = None, *, max_steps: int | None = None,
                record_every: int = 1, policy_name: str | None = None, **options: Any) -> Episode:
    """Run one episode of `policy` (None: the family's scripted expert) in the scene's world; it ends when
    the goal holds, when an expert has finished, or after `max_steps` (None: the scene's own). `options`
    are the world's own: ours takes `env` (a built `SimEnv` to reuse) and `on_step(env, t)`, LIBERO's
    `dart_noise` and `noise_seed` (see `sim.mujoco_episode`, `sim.libero.episode`)."""
    return world_of(spec).run_episode(spec, policy, max_steps=max_steps, record_every=record_every,
                                      policy_name=policy_name, **options)


def batch_world(specs: Sequence[SceneSpec]) -> Any:
    """The one world of `specs` when it runs episodes in lockstep (`World.run_episodes`), else None."""
    if len({world_of(spec).name for spec in specs}) != 1:
        return None
    world = world_of(specs[0])
    return world if world.run_episodes is not None else None


def run_episodes(specs: Sequence[SceneSpec], act: BatchPolicy, *, max_steps: int | None = None,
                 record_every: int = 1, policy_name: str = "policy") -> list[Episode | Exception]:
    """One episode of the batched policy `act` in each scene, in lockstep (see `BatchPolicy`): each is the
    episode `run_episode` gives with the same chunks, or the exception it raised. The scenes must share a
    world that runs batches (`batch_world`); ValueError otherwise."""
    world = batch_world(specs) if specs else None
    if world is None:
        raise ValueError("run_episodes: the scenes must share one world that runs episodes in lockstep "
                         f"(worlds: {sorted({world_of(s).name for s in specs})})")
    return world.run_episodes(specs, act, max_steps=max_steps, record_every=record_every,
                              policy_name=policy_name)
