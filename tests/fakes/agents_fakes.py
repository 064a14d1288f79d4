"""Fakes for the critic / verify / writer tests.

- `carry_episode`: a synthetic pick-place `Episode` from a list of `Frame`s (privileged numbers chosen by
  the test; no simulator), so each rule of the critic can be checked on exactly the evidence it reads.
- `QueuedCompleter` + `queued_llm`: the real `PromptedLLM` (our templates are rendered with
  StrictUndefined, answers parsed and validated) over a completer that returns queued answers and
  records every request.
- `FactorRunBatch`: a `run_batch` whose episodes fail in a phase with a probability that depends on the
  factor values, deterministic per item seed.
- `FakeSandboxPool`: `run_many` that builds scenes with the family's `make_scene` (or fails on demand).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.llm.base import Completion, Request
from agents.llm.client import PromptedLLM
from sandbox.results import SandboxResult
from sim.episode import Episode
from sim.experts.primitives import R_DOWN, rot_z
from sim.families import get_family
from sim.scene import SceneSpec
from sim.world import StateLayout, WorldState

PLATE_HALF = (0.069, 0.069, 0.01)


# ---- synthetic episodes ---------------------------------------------------------------------------------
@dataclass
class Frame:
    """One recorded state of a pick-place episode."""

    ee: tuple[float, float, float]
    obj: tuple[float, float, float]  # object AABB centre
    phase: str
    gripper: float = 0.08
    grasp: bool = False
    obj_yaw: float = 0.0
    ee_yaw: float = 0.0
    touches: tuple[tuple[str, str], ...] = ()


def pick_place_scene(**overrides: Any) -> SceneSpec:
    """The pick-place family's default scene with some factors changed (flat names)."""
    fam = get_family("pick_place")
    factors = fam.default_factors()
    for f in fam.factors:
        if f.name in overrides:
            factors[f.group][f.name] = overrides[f.name]
    return fam.make_scene(factors, seed=3)


def _layout(scene: SceneSpec) -> StateLayout:
    halves = []
    for o in scene.objects:
        if o.kind == "box":
            halves.append(o.size)
        elif o.kind == "cylinder":
            halves.append((o.size[0], o.size[0], o.size[1]))
        else:
            halves.append(tuple(h * o.size[0] for h in PLATE_HALF))
    names = tuple(o.name for o in scene.objects)
    return StateLayout(objects=names, object_half=np.array(halves, float),
                       object_center=np.zeros((len(names), 3)),
                       joints=(), joint_range=np.zeros((0, 2)), regions=(), region_half=np.zeros((0, 3)),
                       handles=(), entities=("robot", "table", *names))


def _state(layout: StateLayout, scene: SceneSpec, f: Frame) -> WorldState:
    target = scene.object("target")
    pos = np.array([f.obj, (*target.pos, PLATE_HALF[2])], float)
    mats = np.array([rot_z(f.obj_yaw), np.eye(3)])
    e = len(layout.entities)
    contacts = np.zeros((e, e), bool)
    for a, b in f.touches:
        i, j = layout.entities.index(a), layout.entities.index(b)
        contacts[i, j] = contacts[j, i] = True
    grasp = np.zeros(e, bool)
    grasp[layout.entities.index("object")] = f.grasp
    return WorldState(layout=layout, ee_pos=np.array(f.ee, float), ee_mat=rot_z(f.ee_yaw) @ R_DOWN,
                      gripper=f.gripper, obj_pos=pos, obj_mat=mats, joint_q=np.zeros(0),
                      region_pos=np.zeros((0, 3)), region_mat=np.zeros((0, 3, 3)),
                      handle_pos=np.zeros((0, 3)), contacts=contacts, grasp=grasp)


def carry_episode(scene: SceneSpec, frames: Sequence[Frame], *, every: int = 5) -> Episode:
    """A failed episode whose recorded states are `frames`, `every` control steps apart."""
    layout = _layout(scene)
    states = [_state(layout, scene, f) for f in frames]
    phases = [f.phase for f in frames]
    fam = get_family(scene.family)
    furthest = max(fam.phases.index(p) for p in phases)
    steps = np.arange(len(frames)) * every
    return Episode(scene=scene, actions=np.zeros((int(steps[-1]), 7)), states=states, state_steps=steps,
                   phases=phases, success=False, failing_phase=fam.phases[min(furthest, len(fam.phases) - 2)],
                   policy="fake")


def line(a: Sequence[float], b: Sequence[float], n: int) -> list[tuple[float, float, float]]:
    """`n` points from a to b (b included)."""
    return [tuple(float(x) for x in np.asarray(a) + (np.asarray(b) - np.asarray(a)) * (k + 1) / n)
            for k in range(n)]


def yaw_grasp_failure(obj_yaw: float = 0.55) -> Episode:
    """A cube at `obj_yaw`: the hand arrives square to the world, the fingers jam on the cube's corners
    (one pad touches), no grasp; the hand then leaves without it."""
    scene = pick_place_scene(obj_yaw=obj_yaw, size=0.022)
    o = (*scene.object("object").pos, 0.022)
    width = 2 * 0.022 * (abs(math.cos(obj_yaw)) + abs(math.sin(obj_yaw)))
    frames = [Frame(ee=p, obj=o, obj_yaw=obj_yaw, phase="approach")
              for p in line((-0.2, 0.0, 0.3), (o[0], o[1], 0.1), 10)]
    frames += [Frame(ee=p, obj=o, obj_yaw=obj_yaw, phase="approach" if p[2] > 0.05 else "grasp")
               for p in line((o[0], o[1], 0.1), (o[0], o[1], 0.024), 6)]
    frames += [Frame(ee=(o[0], o[1], 0.024), obj=o, obj_yaw=obj_yaw, phase="grasp", gripper=g,
                     touches=(("robot", "object"),)) for g in np.linspace(0.08, width, 6)]
    frames += [Frame(ee=p, obj=o, obj_yaw=obj_yaw, phase="approach", gripper=width)
               for p in line((o[0], o[1], 0.024), (o[0], o[1], 0.15), 8)]
    return carry_episode(scene, frames)


def slip_lift_failure(mass: float = 0.195, friction: float = 0.82) -> Episode:
    """Grasped, then the object slides down in the fingers while the hand rises and drops 2 cm up."""
    scene = pick_place_scene(mass=mass, friction=friction)
    x, y = scene.object("object").pos
    frames = [Frame(ee=p, obj=(x, y, 0.02), phase="approach")
              for p in line((-0.2, 0.0, 0.3), (x, y, 0.02), 10)]
    frames += [Frame(ee=(x, y, 0.02), obj=(x, y, 0.02), phase="grasp", gripper=0.04, grasp=True,
                     touches=(("robot", "object"),)) for _ in range(3)]
    for k, z in enumerate(np.linspace(0.03, 0.09, 7)):
        oz = 0.02 + 0.004 * k
        frames.append(Frame(ee=(x, y, float(z)), obj=(x, y, oz), phase="lift", gripper=0.04, grasp=k < 5,
                            touches=(("robot", "object"),) if k < 5 else ()))
    frames += [Frame(ee=(x, y, 0.1), obj=(x, y, 0.02), phase="approach", gripper=0.04) for _ in range(5)]
    return carry_episode(scene, frames)


def idle_failure(**overrides: Any) -> Episode:
    """The hand barely moves: the policy did not understand what to do."""
    scene = pick_place_scene(**overrides)
    o = (*scene.object("object").pos, 0.02)
    frames = [Frame(ee=(-0.1, 0.0, 0.3 - 0.001 * k), obj=o, phase="approach") for k in range(20)]
    return carry_episode(scene, frames)


# ---- LLM -------------------------------------------------------------------------------------------------
Answer = dict[str, Any] | str | Completion


@dataclass
class QueuedCompleter:
    """A `Completer` that answers with queued tool arguments (dict), raw text (str: no tool call) or a
    ready `Completion`, and records every request."""

    answers: list[Answer]
    backend: str = "fake"
    supports_images: bool = False
    requests: list[Request] = field(default_factory=list)

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": "fake-model"}

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"no queued answer left for prompt {request.prompt_name!r}")
        a = self.answers.pop(0)
        if isinstance(a, Completion):
            return a
        if isinstance(a, str):
            return Completion(text=a, tool_called=a.startswith("{"), finish_reason="stop")
        return Completion(text=json.dumps(a), tool_args=a, tool_called=True, finish_reason="tool_calls")

    def close(self) -> None:
        pass


def queued_llm(*answers: Answer, images: bool = False) -> tuple[PromptedLLM, QueuedCompleter]:
    """A real `PromptedLLM` over a `QueuedCompleter` (no cache, no log)."""
    completer = QueuedCompleter(list(answers), supports_images=images)
    return PromptedLLM(completer), completer


# ---- run_batch and sandbox -------------------------------------------------------------------------------
@dataclass(frozen=True)
class FakeOutcome:
    success: bool
    failing_phase: str | None
    error: str | None = None


@dataclass
class FactorRunBatch:
    """Each item fails in `phase` with probability `p_fail(factors)`, else succeeds (`base` chance of a
    failure in another phase); deterministic in the item's seed and arm. Records the items it ran."""

    p_fail: Callable[[dict[str, Any]], float]
    phase: str = "grasp"
    base: float = 0.0
    error_every: int = 0  # every k-th item errors (0: none)
    calls: list[list[Any]] = field(default_factory=list)

    def __call__(self, items: Sequence[Any]) -> list[FakeOutcome]:
        self.calls.append(list(items))
        out = []
        for k, it in enumerate(items):
            if self.error_every and k % self.error_every == 0:
                out.append(FakeOutcome(False, None, "generation failed: [runtime] boom"))
                continue
            u = np.random.default_rng([it.seed, 0 if it.arm == "targeted" else 1]).random()
            if u < self.p_fail(it.factors):
                out.append(FakeOutcome(False, self.phase))
            elif u > 1 - self.base:
                out.append(FakeOutcome(False, "approach"))
            else:
                out.append(FakeOutcome(True, None))
        return out


@dataclass
class FakeSandboxPool:
    """`run_many` builds each scene with the family's `make_scene` (no program is executed); tasks whose
    factors satisfy `fail_if` come back as runtime errors."""

    family: str = "pick_place"
    fail_if: Callable[[dict[str, Any]], bool] = lambda f: False
    ran: list[Any] = field(default_factory=list)

    def run_many(self, tasks: Sequence[Any]) -> list[SandboxResult]:
        fam = get_family(self.family)
        out = []
        for t in tasks:
            self.ran.append(t)
            if self.fail_if(dict(t.factors)):
                out.append(SandboxResult.failure("runtime", "ValueError: no room for the object", line=12))
                continue
            grouped: dict[str, dict[str, Any]] = {g: {} for g in ("task", "spatial", "attribute")}
            for f in fam.factors:
                grouped[f.group][f.name] = t.factors.get(f.name, f.default)
            out.append(SandboxResult(scenes=[fam.make_scene(grouped, seed=t.seed)]))
        return out
