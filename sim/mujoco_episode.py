"""Episodes in our MuJoCo world: run an expert or any policy in a scene and record what happened.

A policy is any callable `policy(obs) -> action chunk` (array (h, 7) or (7,)); the runner executes the
chunk open-loop, then asks again. `obs` is an `Observation`: the instruction, the privileged
`WorldState`, a flat proprio vector, and camera frames when the policy asks for them (a policy with
`cameras` (names) and `image_size` attributes gets `obs.images[name]`, uint8 (S, S, 3), rendered at each
query). Scripted experts are wrapped by `ExpertPolicy`. Callers run an episode of any world with
`sim.episode.run_episode`, which comes here for a family whose `world` is "mujoco".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim.conditions import PolicyView
from sim.env import SETTLE_STEPS, SimEnv
from sim.families import TaskFamily, get_family
from sim.records import Episode, Observation, Policy, make_observation
from sim.render import PolicyFrames
from sim.scene import SceneSpec
from sim.world import WorldState


class ExpertPolicy:
    """A family's scripted expert behind the policy interface (one action per call)."""

    def __init__(self, spec: SceneSpec, family: type[TaskFamily] | None = None) -> None:
        fam = family or get_family(spec.family)
        self.expert = fam.expert(spec)

    def __call__(self, obs: Observation) -> np.ndarray:
        return self.expert(obs.state)[None]

    @property
    def finished(self) -> bool:
        return self.expert.finished


def _act(spec: SceneSpec, env: SimEnv, policy: Policy, expert: bool, limit: int, frames: PolicyFrames,
         states: list[WorldState], steps: list[int], actions: list[np.ndarray], record_every: int,
         on_step: Callable[[SimEnv, int], None] | None) -> tuple[int, WorldState]:
    """Ask the policy and execute its chunks until success, the expert's end, or `limit` steps. A policy
    reads the state through the scene's `PolicyView` (its observation noise and delay); the expert reads the
    world's own."""
    t, s = 0, states[0]
    view = PolicyView(spec, active=not expert)
    view.see(s)
    while t < limit:
        chunk = np.atleast_2d(np.asarray(policy(make_observation(spec, view.read(s), t, frames())), float))
        if chunk.shape[1] != 7 or not np.isfinite(chunk).all():
            raise ValueError(f"policy returned an action chunk of shape {chunk.shape} (need (h, 7), finite)")
        for a in chunk[: limit - t]:
            s = env.step(a)
            view.see(s)
            actions.append(a)
            t += 1
            if on_step:
                on_step(env, t)
            if t % record_every == 0:
                states.append(s)
                steps.append(t)
        if env.success(s) or (expert and policy.finished):
            break
    return t, s


def run_mujoco_episode(
    spec: SceneSpec,
    policy: Policy | None = None,
    *,
    env: SimEnv | None = None,
    max_steps: int | None = None,
    record_every: int = 1,
    policy_name: str | None = None,
    on_step: Callable[[SimEnv, int], None] | None = None,
) -> Episode:
    """Run one episode in our world. `policy=None` runs the family's scripted expert. The episode ends when
    the goal holds (checked each step), when an expert has finished its plan, or after `max_steps`; `env`
    reuses a built `SimEnv` of the scene, `on_step(env, t)` is called after every control step."""
    family = get_family(spec.family)
    env = env or SimEnv(spec)
    expert = policy is None
    policy = policy or ExpertPolicy(spec, family)
    limit = max_steps or spec.max_steps
    s = env.reset()
    states, steps, actions = [s], [0], []
    frames = PolicyFrames(env, policy)
    try:
        t, s = _act(spec, env, policy, expert, limit, frames, states, steps, actions, record_every, on_step)
    finally:
        frames.close()
    s = env.hold(SETTLE_STEPS)
    if steps[-1] != t:
        states.append(s)
        steps.append(t)
    else:
        states[-1] = s
    phases, failing = family.label(spec, states)
    success = env.success(s)
    if success and phases[-1] != "done":  # labels come from the family; trust the goal test
        phases[-1] = "done"
    return Episode(
        spec,
        np.array(actions).reshape(-1, 7),
        states,
        np.array(steps),
        phases,
        success,
        None if success else failing,
        policy_name or ("expert" if expert else "policy"),
    )
