"""The worlds a scene can live in, one registry entry each: our MuJoCo world ("mujoco": `sim.builder`,
`sim.mujoco_episode`, `sim.mujoco_validity`) and LIBERO's ("libero": `sim.libero`, robosuite 1.4).

A family says whose world its scenes are (`TaskFamily.world`); `world_of(spec)` is that entry, and
`sim.episode.run_episode` / `sim.validity.check_scene` ask it, so no code branches on the world itself.
LIBERO's entry imports `sim.libero` only when it is used (robosuite and LIBERO load when an environment is
made), so a run in our world never pays for it. A new world is one more `WORLDS.register` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.registry import Registry
from sim.builder import build_scene
from sim.families import get_family
from sim.mujoco_episode import run_mujoco_episode, run_mujoco_episodes
from sim.mujoco_validity import ValidityConfig, check_mujoco_scene
from sim.records import Episode, ValidityReport
from sim.scene import SceneSpec


@dataclass(frozen=True, kw_only=True)
class World:
    """What a world gives: its own scene of a spec, an episode, a scene's validity, the scripted expert."""

    name: str
    # spec → the world's scene (ours: the compiled `BuiltScene`; LIBERO's: the task's edited BDDL problem)
    build: Callable[[SceneSpec], Any]
    # (spec, policy or None for the expert, *, max_steps, record_every, policy_name, the world's own
    # options) → the recorded `Episode`
    run_episode: Callable[..., Episode]
    # (spec, *, solve, config) → the scene's `ValidityReport` (the expert's demonstration on it when solved)
    check_scene: Callable[..., ValidityReport]
    # (spec, env) → a fresh scripted expert for one episode; `env` is the world's environment of the
    # scene (ours reads `WorldState`s and ignores it, LIBERO's reads the environment's privileged state)
    expert: Callable[[SceneSpec, Any], Any]
    # (specs, batched policy, *, max_steps, policy_name) → each scene's `Episode` (or the exception it
    # raised), the episodes run in lockstep so the policy acts for all of them at once; None where the world
    # runs one episode at a time
    run_episodes: Callable[..., list[Any]] | None = None


WORLDS: Registry[World] = Registry("world")


def world_of(spec: SceneSpec) -> World:
    """The world of a scene: the one its family declares (`TaskFamily.world`)."""
    return WORLDS.get(get_family(spec.family).world)


def _our_expert(spec: SceneSpec, env: Any = None) -> Any:
    del env  # our experts read the WorldState each action is asked with
    return get_family(spec.family).expert(spec)


WORLDS.register("mujoco", World(name="mujoco", build=build_scene, run_episode=run_mujoco_episode,
                                check_scene=check_mujoco_scene, expert=_our_expert,
                                run_episodes=run_mujoco_episodes))


def _libero_build(spec: SceneSpec) -> Any:
    from sim.libero.world import libero_scene

    return libero_scene(spec)


def _libero_run(spec: SceneSpec, policy: Any = None, **options: Any) -> Episode:
    from sim.libero.episode import run_libero_episode

    return run_libero_episode(spec, policy, **options)


def _libero_check(spec: SceneSpec, *, solve: bool = True,
                  config: ValidityConfig | None = None) -> ValidityReport:
    if config is not None:
        raise ValueError(f"scene {spec.scene_id} is checked in LIBERO (it builds, the expert solves it): "
                         "the MuJoCo tolerances of a ValidityConfig do not apply")
    from sim.libero.episode import check_libero_scene

    return check_libero_scene(spec, solve=solve)


def _libero_expert(spec: SceneSpec, env: Any) -> Any:
    from sim.libero.drawer import expert_for

    del spec  # the expert reads the goal from the environment's task
    return expert_for(env)


WORLDS.register("libero", World(name="libero", build=_libero_build, run_episode=_libero_run,
                                check_scene=_libero_check, expert=_libero_expert))
