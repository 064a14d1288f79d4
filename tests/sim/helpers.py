"""Shared by the family tests: play a family's scripted expert in our MuJoCo world, state by state."""

from __future__ import annotations

from sim.env import SimEnv
from sim.experts.primitives import ScriptedExpert
from sim.families.base import TaskFamily
from sim.scene import SceneSpec
from sim.world import WorldState


def play_expert(family: type[TaskFamily], spec: SceneSpec) -> tuple[SimEnv, ScriptedExpert, list[WorldState]]:
    """Reset a fresh `SimEnv` of `spec`, step `family`'s expert until it finishes (at most `spec.max_steps`
    steps), then hold 10 steps: the env, the expert, and every state (the reset first, the held one last)."""
    env = SimEnv(spec)
    s = env.reset()
    expert = family.expert(spec)
    states = [s]
    for _ in range(spec.max_steps):
        s = env.step(expert(s))
        states.append(s)
        if expert.finished:
            break
    states.append(env.hold(10))
    return env, expert, states
