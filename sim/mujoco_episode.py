"""Episodes in our MuJoCo world: run an expert or any policy in a scene and record what happened.

A policy is any callable `policy(obs) -> action chunk` (array (h, 7) or (7,)); the runner executes the
chunk open-loop, then asks again. `obs` is an `Observation`: the instruction, the privileged
`WorldState`, a flat proprio vector, and camera frames when the policy asks for them (a policy with
`cameras` (names) and `image_size` attributes gets `obs.images[name]`, uint8 (S, S, 3), rendered at each
query). Scripted experts are wrapped by `ExpertPolicy`. Callers run an episode of any world with
`sim.episode.run_episode`, which comes here for a family whose `world` is "mujoco".
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np

from sim.conditions import PolicyView
from sim.env import SETTLE_STEPS, SimEnv
from sim.families import TaskFamily, get_family
from sim.records import BatchPolicy, Episode, Observation, Policy, make_observation
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


def _acting(spec: SceneSpec, env: SimEnv, finished: Callable[[], bool] | None, limit: int,
            frames: PolicyFrames, states: list[WorldState], steps: list[int], actions: list[np.ndarray],
            record_every: int, on_step: Callable[[SimEnv, int], None] | None
            ) -> Generator[Observation, Any, tuple[int, WorldState]]:
    """One episode's acting, as a generator: it yields each observation and is sent the action chunk for
    it, which it executes open loop, until success, the expert's end (`finished`, only for an expert) or
    `limit` steps; it returns (steps taken, last state). One episode drives it with its policy
    (`run_mujoco_episode`), a batch drives many in lockstep (`run_mujoco_episodes`). A policy reads the state
    through the scene's `PolicyView` (its observation noise and delay); the expert reads the world's own."""
    t, s = 0, states[0]
    view = PolicyView(spec, active=finished is None)
    view.see(s)
    while t < limit:
        chunk = np.atleast_2d(np.asarray((yield make_observation(spec, view.read(s), t, frames())), float))
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
        if env.success(s) or (finished is not None and finished()):
            break
    return t, s


class _Episode:
    """One episode in progress: its environment, what it has recorded, and its acting generator."""

    def __init__(self, spec: SceneSpec, policy: Any, env: SimEnv | None, max_steps: int | None,
                 record_every: int, on_step: Callable[[SimEnv, int], None] | None,
                 finished: Callable[[], bool] | None) -> None:
        self.spec, self.family = spec, get_family(spec.family)
        self.env = env or SimEnv(spec)
        self.states, self.steps, self.actions = [self.env.reset()], [0], []
        self.frames = PolicyFrames(self.env, policy)
        self.acting = _acting(spec, self.env, finished, max_steps or spec.max_steps, self.frames, self.states,
                              self.steps, self.actions, record_every, on_step)

    def finish(self, t: int, policy_name: str) -> Episode:
        """The recorded `Episode`: the world held still for `SETTLE_STEPS`, then labelled and judged."""
        env, states, steps = self.env, self.states, self.steps
        s = env.hold(SETTLE_STEPS)
        if steps[-1] != t:
            states.append(s)
            steps.append(t)
        else:
            states[-1] = s
        phases, failing = self.family.label(self.spec, states)
        success = env.success(s)
        if success and phases[-1] != "done":  # labels come from the family; trust the goal test
            phases[-1] = "done"
        return Episode(self.spec, np.array(self.actions).reshape(-1, 7), states, np.array(steps), phases,
                       success, None if success else failing, policy_name)


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
    expert = policy is None
    policy = policy or ExpertPolicy(spec, get_family(spec.family))
    ep = _Episode(spec, policy, env, max_steps, record_every, on_step,
                  (lambda: policy.finished) if expert else None)
    try:
        obs = next(ep.acting)
        while True:
            obs = ep.acting.send(policy(obs))
    except StopIteration as stop:
        t, _ = stop.value
    finally:
        ep.frames.close()
    return ep.finish(t, policy_name or ("expert" if expert else "policy"))


def run_mujoco_episodes(specs: Sequence[SceneSpec], act: BatchPolicy, *, max_steps: int | None = None,
                        record_every: int = 1, policy_name: str = "policy") -> list[Episode | Exception]:
    """Run one episode of a batched policy in each scene, in lockstep: every step on which episodes need
    a chunk, `act(observations, which)` is asked once for all of them (`which`: their indices in `specs`)
    and returns their chunks in that order. Each episode is what `run_mujoco_episode` gives with the same
    chunks; an episode that raises is its exception in the list, and the others go on."""
    eps = [_Episode(spec, act, None, max_steps, record_every, None, None) for spec in specs]
    out: list[Episode | Exception | None] = [None] * len(eps)
    pending: dict[int, Observation] = {}

    def advance(i: int, chunk: Any = None) -> None:
        try:
            pending[i] = next(eps[i].acting) if chunk is None else eps[i].acting.send(chunk)
        except StopIteration as stop:
            pending.pop(i, None)
            out[i] = eps[i].finish(stop.value[0], policy_name)
        except Exception as e:  # noqa: BLE001 - one episode's failure is its result; the batch goes on
            pending.pop(i, None)
            out[i] = e

    try:
        for i in range(len(eps)):
            advance(i)
        while pending:
            which = sorted(pending)
            for i, chunk in zip(which, act([pending[i] for i in which], which), strict=True):
                advance(i, chunk)
    finally:
        for ep in eps:
            ep.frames.close()
    return out  # type: ignore[return-value]
