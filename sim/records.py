"""What a world gives back and a policy sees, in every world: the `Observation` a policy is asked with,
the `Policy` interface, the recorded `Episode` (and its files) and a scene's `ValidityReport`.

These are the types every world's runner and checks produce (`sim.mujoco_episode`, `sim.mujoco_validity`,
`sim.libero.episode`); running an episode or checking a scene in the scene's own world is `sim.episode`
and `sim.validity` (through the world registry, `sim.worlds`).

On disk an episode is `<name>.npz` (actions and stacked state arrays) beside `<name>.json` (meta:
success, phase timeline, failing phase, scene, keyframes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from sim.scene import SceneSpec
from sim.world import DYNAMIC, StateLayout, WorldState

Reason = Literal["compile", "placement", "interpenetration", "settling", "reachability", "solvability"]


@dataclass(frozen=True)
class Observation:
    instruction: str
    state: WorldState
    proprio: np.ndarray  # ee position (3), ee rotation (first two columns, 6), gripper opening (1)
    step: int
    images: dict[str, np.ndarray] = field(default_factory=dict)  # camera → uint8 (S, S, 3), when asked


Policy = Callable[[Observation], np.ndarray]
# A policy acting in many episodes at once (`sim.episode.run_episodes`): (observations, their episodes'
# indices) → one action chunk for each, in that order
BatchPolicy = Callable[[Sequence[Observation], Sequence[int]], Sequence[np.ndarray]]


def proprio(s: WorldState) -> np.ndarray:
    """The flat proprio vector of a state: ee position (3), rotation's first two columns (6), gripper (1)."""
    return np.concatenate((s.ee_pos, s.ee_mat[:, :2].T.reshape(-1), [s.gripper]))


def make_observation(spec: SceneSpec, s: WorldState, step: int,
                     images: dict[str, np.ndarray] | None = None) -> Observation:
    """What a policy is asked with at control step `step` of an episode in `spec`."""
    return Observation(spec.instruction, s, proprio(s), step, images or {})


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


@dataclass(frozen=True)
class ValidityReport:
    """The outcome: `ok`, the failing check's `reason` and a readable `message`, every check run."""

    ok: bool
    reason: Reason | None
    message: str
    checks: dict[str, bool] = field(default_factory=dict)  # check name → passed, in the order run
    demo: Episode | None = None  # the expert's episode when it succeeded: a demonstration
    attempt: Episode | None = None  # the expert's episode whatever its outcome (failing phase on failure)

    def __str__(self) -> str:
        return self.message
