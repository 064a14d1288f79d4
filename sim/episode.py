"""Episodes: run an expert or any policy in a scene and record what happened.

A policy is any callable `policy(obs) -> action chunk` (array (h, 7) or (7,)); the runner executes the
chunk open-loop, then asks again. `obs` is an `Observation`: the instruction, the privileged
`WorldState`, a flat proprio vector, and camera frames when the policy asks for them (a policy with
`cameras` (names) and `image_size` attributes gets `obs.images[name]`, uint8 (S, S, 3), rendered at each
query). Scripted experts are wrapped by `ExpertPolicy`.

On disk an episode is `<name>.npz` (actions and stacked state arrays) beside `<name>.json` (meta:
success, phase timeline, failing phase, scene, keyframes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sim.env import SimEnv
from sim.families.base import TaskFamily, get_family
from sim.scene import SceneSpec
from sim.world import DYNAMIC, StateLayout, WorldState

SETTLE_STEPS = 10  # control steps held after the policy stops, before the success test


@dataclass(frozen=True)
class Observation:
    instruction: str
    state: WorldState
    proprio: np.ndarray  # ee position (3), ee rotation (first two columns, 6), gripper opening (1)
    step: int
    images: dict[str, np.ndarray] = field(default_factory=dict)  # camera → uint8 (S, S, 3), when asked


Policy = Callable[[Observation], np.ndarray]


def proprio(s: WorldState) -> np.ndarray:
    """The flat proprio vector of a state: ee position (3), rotation's first two columns (6), gripper (1)."""
    return np.concatenate((s.ee_pos, s.ee_mat[:, :2].T.reshape(-1), [s.gripper]))


def make_observation(spec: SceneSpec, s: WorldState, step: int,
                     images: dict[str, np.ndarray] | None = None) -> Observation:
    return Observation(spec.instruction, s, proprio(s), step, images or {})


class _Frames:
    """The frames a policy asks for (`cameras`, `image_size`), rendered from the env on demand."""

    def __init__(self, env: SimEnv, policy: object) -> None:
        self.cameras = tuple(getattr(policy, "cameras", ()) or ())
        self.renderer = None
        if self.cameras:
            from sim.render import Renderer

            size = int(policy.image_size)
            self.renderer = Renderer(env.model, size, size)
        self.env = env

    def __call__(self) -> dict[str, np.ndarray]:
        if self.renderer is None:
            return {}
        return {c: self.renderer.render(self.env.data, c) for c in self.cameras}

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()


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


@dataclass
class Episode:
    scene: SceneSpec
    actions: np.ndarray  # (T, 7)
    states: list[WorldState]  # every `record_every`-th state, first and last always included
    state_steps: np.ndarray  # control step of each recorded state
    phases: list[str]  # per recorded state
    success: bool
    failing_phase: str | None
    policy: str = "expert"
    keyframes: list[str] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.actions)

    @property
    def is_demonstration(self) -> bool:
        """The expert's episode — plain ("expert") or DART-style, its executed actions noised and its labels
        the expert's ("expert_dart0.3", `sim.libero.episode`) — rather than a policy's rollout."""
        return self.policy == "expert" or self.policy.startswith("expert_")

    def meta(self) -> dict:
        timeline, last = [], None
        for step, p in zip(self.state_steps.tolist(), self.phases, strict=True):
            if p != last:
                timeline.append([step, p])
                last = p
        return {
            "scene_id": self.scene.scene_id,
            "family": self.scene.family,
            "seed": self.scene.seed,
            "instruction": self.scene.instruction,
            "policy": self.policy,
            "success": self.success,
            "failing_phase": self.failing_phase,
            "steps": self.steps,
            "phase_timeline": timeline,
            "keyframes": self.keyframes,
            "layout": self.states[0].layout.to_json(),
            "scene": json.loads(self.scene.model_dump_json()),
        }

    def save(self, path: str | Path) -> Path:
        """Write `<path>.npz` and `<path>.json`, each atomically (a temporary file renamed into place, so a
        process killed while saving leaves no half-written episode, and a job run again rewrites the same
        files); returns the npz path."""
        path = Path(path).with_suffix("")
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {k: np.stack([np.asarray(getattr(s, k)) for s in self.states]) for k in DYNAMIC}
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez_compressed(f, actions=self.actions, state_steps=self.state_steps,
                                phases=np.array(self.phases), **{f"s_{k}": v for k, v in arrays.items()})
        os.replace(tmp, path.with_suffix(".npz"))
        tmp.write_text(json.dumps(self.meta(), indent=1))
        os.replace(tmp, path.with_suffix(".json"))
        return path.with_suffix(".npz")

    @classmethod
    def load(cls, path: str | Path) -> Episode:
        path = Path(path).with_suffix("")
        meta = json.loads(path.with_suffix(".json").read_text())
        layout = StateLayout.from_json(meta["layout"])
        with np.load(path.with_suffix(".npz")) as z:
            n = len(z["state_steps"])
            arrays = {k: z[f"s_{k}"] for k in DYNAMIC}  # each z[...] decompresses: read every array once
            states = [WorldState.from_arrays(layout, {k: v[i] for k, v in arrays.items()}) for i in range(n)]
            return cls(
                scene=SceneSpec.model_validate(meta["scene"]),
                actions=z["actions"],
                states=states,
                state_steps=z["state_steps"],
                phases=[str(p) for p in z["phases"]],
                success=meta["success"],
                failing_phase=meta["failing_phase"],
                policy=meta["policy"],
                keyframes=meta["keyframes"],
            )


def _act(spec: SceneSpec, env: SimEnv, policy: Policy, expert: bool, limit: int, frames: _Frames,
         states: list[WorldState], steps: list[int], actions: list[np.ndarray], record_every: int,
         on_step: Callable[[SimEnv, int], None] | None) -> tuple[int, WorldState]:
    """Ask the policy and execute its chunks until success, the expert's end, or `limit` steps."""
    t, s = 0, states[0]
    while t < limit:
        chunk = np.atleast_2d(np.asarray(policy(make_observation(spec, s, t, frames())), float))
        if chunk.shape[1] != 7 or not np.isfinite(chunk).all():
            raise ValueError(f"policy returned an action chunk of shape {chunk.shape} (need (h, 7), finite)")
        for a in chunk[: limit - t]:
            s = env.step(a)
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


def run_episode(
    spec: SceneSpec,
    policy: Policy | None = None,
    *,
    env: SimEnv | None = None,
    max_steps: int | None = None,
    record_every: int = 1,
    policy_name: str | None = None,
    on_step: Callable[[SimEnv, int], None] | None = None,
) -> Episode:
    """Run one episode. `policy=None` runs the family's scripted expert. The episode ends when the goal
    holds (checked each step), when an expert has finished its plan, or after `max_steps`. A LIBERO scene
    (`spec.libero`) runs in LIBERO (`sim.libero.episode`), where `env` and `on_step` do not apply."""
    if spec.libero is not None:
        from sim.libero.episode import run_libero_episode

        if env is not None or on_step is not None:
            raise ValueError("a LIBERO scene runs in its own LIBERO environment: `env` and `on_step` "
                             "are ours")
        return run_libero_episode(spec, policy, max_steps=max_steps, record_every=record_every,
                                  policy_name=policy_name)
    family = get_family(spec.family)
    env = env or SimEnv(spec)
    expert = policy is None
    policy = policy or ExpertPolicy(spec, family)
    limit = max_steps or spec.max_steps
    s = env.reset()
    states, steps, actions = [s], [0], []
    frames = _Frames(env, policy)
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
