"""What the critic reads about a failed episode: a phase timeline from the family's predicate labels, the
key privileged numbers at the moment of failure (distances, heights, grasp, contacts, gripper, yaw
misalignment, reach), episode-wide events (grasp lost, stalled hand, pushed object, wrong target) and the
scene's factor values placed in the family's in-distribution ranges.

`summarize_failure(episode)` returns a `FailureSummary`: structured numbers for the rules critic and
`text()` for an LLM. Both critics see the same evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.critic.factors import FactorReading, read_factors
from common.stats import fisher_greater
from programs.factor_space import reference_schema
from programs.vocab import bottom, top
from sim.builder import ROBOT_BASE
from sim.episode import Episode
from sim.experts.primitives import ee_yaw, grasp_yaw
from sim.factors import FactorDef
from sim.scene import SceneSpec
from sim.world import WorldState

DT = 0.05  # seconds per control step (20 Hz)
NEAR = 0.03  # grip site this close to the object (or handle) counts as "at it" (m), as the phase labels
STALL_SPEED = 0.002  # mean hand speed (m per control step) below which the hand counts as stopped
STALL_WINDOW = 20  # control steps at the end of the episode over which a stall is judged
MAX_OPENING = 0.08  # the Panda's finger opening (m)


class PhaseSpan(BaseModel):
    """A stretch of consecutive states with one phase label (control steps, inclusive start)."""

    model_config = ConfigDict(frozen=True)

    phase: str
    start: int
    end: int


class Contrast(BaseModel):
    """How one factor separates failures from successes among the round's other episodes of the family:
    those whose value is like the failing scene's (within `NEAR` of the ID range for a number, the same
    value for a choice) against the rest."""

    model_config = ConfigDict(frozen=True)

    name: str
    near: int
    near_failed: int
    far: int
    far_failed: int
    p_value: float  # one-sided Fisher exact: episodes like this one fail more often

    @property
    def gap(self) -> float:
        """Failure rate near minus elsewhere (0 when either side is empty)."""
        if not self.near or not self.far:
            return 0.0
        return self.near_failed / self.near - self.far_failed / self.far


NEAR = 0.25  # "a value like this one": within a quarter of the factor's ID range


def with_peers(sm: FailureSummary, peers: Sequence[tuple[dict[str, Any], bool]]) -> FailureSummary:
    """`sm` with a `Contrast` per live factor, from `peers`: the (flat factor values, success) of the
    round's other episodes of the same family."""
    out: dict[str, Contrast] = {}
    for r in sm.factors:
        if not r.live:
            continue
        near = far = near_failed = far_failed = 0
        for values, success in peers:
            if r.name not in values:
                continue
            v = values[r.name]
            if r.type == "choice" or r.lo is None or r.hi is None:
                like = v == r.value
            else:
                try:
                    like = abs(float(v) - float(r.value)) <= NEAR * max(r.hi - r.lo, 1e-9)
                except (TypeError, ValueError):
                    continue
            near += like
            far += not like
            near_failed += like and not success
            far_failed += (not like) and not success
        if near and far:
            out[r.name] = Contrast(name=r.name, near=near, near_failed=near_failed, far=far,
                                   far_failed=far_failed,
                                   p_value=fisher_greater(near_failed, near, far_failed, far))
    return sm.model_copy(update={"contrast": out})


class FailureSummary(BaseModel):
    """Everything the critic knows about one failed episode."""

    model_config = ConfigDict(frozen=True)

    episode_id: str
    family: str
    instruction: str
    success: bool
    failing_phase: str
    steps: int
    timeline: tuple[PhaseSpan, ...]
    subject: str  # the object carried (or the articulated joint)
    target: str  # where it should go ("" for articulated tasks)
    subject_kind: str = ""  # the carried object's kind ("box", "cylinder", ...); "" for articulated tasks
    failure_step: int  # control step of the state the numbers below describe
    numbers: dict[str, float] = Field(default_factory=dict)  # privileged numbers at the failure
    events: tuple[str, ...] = ()  # episode-wide observations, each one sentence
    flags: dict[str, float] = Field(default_factory=dict)  # machine-readable events for the rules critic
    factors: tuple[FactorReading, ...] = ()
    keyframes: tuple[str, ...] = ()
    scene: SceneSpec | None = None  # the failing scene (for probing which task choices a factor needs)
    # what the round's other episodes of the family say about each factor (`with_peers`)
    contrast: dict[str, Contrast] = Field(default_factory=dict)

    def factor(self, name: str) -> FactorReading | None:
        """The reading of factor `name`, if the scene has it."""
        return next((f for f in self.factors if f.name == name), None)

    def text(self, brief: bool = False) -> str:
        """The summary as an LLM reads it; `brief` leaves out what a prompt states elsewhere (the task
        line and the unusual factor values), to save prompt tokens on small local models."""
        lines = [] if brief else [f"Family {self.family}; instruction: \"{self.instruction}\"; "
                                  f"{'succeeded' if self.success else 'failed'} after {self.steps} steps "
                                  f"({self.steps * DT:.1f} s); failing phase: {self.failing_phase}."]
        spans = ", ".join(f"{p.phase} {p.start * DT:.1f}-{p.end * DT:.1f} s" for p in self.timeline)
        lines.append(f"Phase timeline: {spans}" + (f" (of {self.steps * DT:.1f} s)." if brief else "."))
        nums = ", ".join(f"{k} {_fmt(v, k)}" for k, v in self.numbers.items())
        lines.append(f"At the failure (t={self.failure_step * DT:.1f} s): {nums}.")
        lines += [f"- {e}" for e in self.events]
        telling = sorted((c for c in self.contrast.values() if c.gap > 0), key=lambda c: -c.gap)[:3]
        if telling:
            lines.append("Across this round's other episodes of the family: " + "; ".join(
                f"with {c.name} like here {c.near_failed}/{c.near} failed, otherwise {c.far_failed}/{c.far}"
                for c in telling) + ".")
        odd = [f for f in self.factors if f.note and f.live]
        if odd and not brief:
            lines.append("Unusual factor values: " + "; ".join(f"{f.name} = {_fmt(f.value)} ({f.note})"
                                                              for f in odd) + ".")
        return "\n".join(lines)


YES_NO = ("grasped", "robot_touches_object", "object_touches_target", "robot_touches_fixture")


def _fmt(v: Any, key: str = "") -> str:
    if key in YES_NO:
        return "yes" if v else "no"
    if isinstance(v, bool) or not isinstance(v, float | np.floating):
        return str(v)
    return f"{v:.3f}"


# ---- geometry over one state (`top`/`bottom` are the training-program language's own read-outs) --------
def reach(p: np.ndarray) -> float:
    """Horizontal distance from the robot's base (m): the arm's stretch."""
    return float(np.hypot(p[0] - ROBOT_BASE[0], p[1] - ROBOT_BASE[1]))


def contact(s: WorldState, a: str, b: str) -> bool:
    """Whether entities `a` and `b` touch (False for names the state does not know)."""
    try:
        return bool(s.contacts[s.entity(a), s.entity(b)])
    except KeyError:
        return False


def width_across_fingers(s: WorldState, scene: SceneSpec, obj: str) -> float:
    """How wide the object is along the finger-closing axis (m): what the fingers must span."""
    if scene.object_kind(obj) in ("cylinder", "sphere"):
        return 2.0 * scene.object(obj).size[0]
    i = s.obj(obj)
    axis = s.ee_mat[:, 0]
    return float(2.0 * np.abs(axis @ s.obj_mat[i]) @ s.layout.object_half[i])


def yaw_misalignment(s: WorldState, scene: SceneSpec, obj: str) -> float:
    """Angle between the gripper's yaw and the nearest yaw that closes squarely across a box (rad, ≥ 0)."""
    if scene.object_kind(obj) != "box":
        return 0.0
    d = grasp_yaw(s.obj_mat[s.obj(obj)]) - ee_yaw(s)
    return abs((d + math.pi / 4) % (math.pi / 2) - math.pi / 4)


def _yaw(mat: np.ndarray) -> float:
    return math.atan2(mat[1, 0], mat[0, 0])


def yaw_between(s: WorldState, obj: str, target: str) -> float:
    """Turn between the object's and the target's square faces (rad, folded to [0, π/4])."""
    if target in s.layout.regions:
        tm = s.region_mat[s.layout.regions.index(target)]
    elif target in s.layout.objects:
        tm = s.obj_mat[s.obj(target)]
    else:
        return 0.0
    d = _yaw(s.obj_mat[s.obj(obj)]) - _yaw(tm)
    return abs((d + math.pi / 4) % (math.pi / 2) - math.pi / 4)


def carry_numbers(s: WorldState, s0: WorldState, scene: SceneSpec, obj: str, target: str) -> dict[str, float]:
    """Key numbers of a carry-an-object task in one state."""
    o, t = s.position(obj), s.position(target)
    return {
        "ee_to_object": float(np.linalg.norm(s.ee_pos - o)),
        "ee_to_object_xy": float(np.linalg.norm(s.ee_pos[:2] - o[:2])),
        "object_bottom": bottom(s, obj),
        "object_to_target_xy": float(np.linalg.norm(o[:2] - t[:2])),
        "object_above_target_top": bottom(s, obj) - top(s, target),
        "object_moved_xy": float(np.linalg.norm(o[:2] - s0.position(obj)[:2])),
        "gripper_opening": float(s.gripper),
        "object_width_across_fingers": width_across_fingers(s, scene, obj),
        "yaw_misalignment": yaw_misalignment(s, scene, obj),
        "grasped": float(bool(s.grasp[s.entity(obj)])),
        "robot_touches_object": float(contact(s, "robot", obj)),
        "object_touches_target": float(contact(s, obj, target)),
        "ee_reach": reach(s.ee_pos),
        "object_reach": reach(o),
        "target_reach": reach(t),
    } | ({"yaw_to_target": yaw_between(s, obj, target)} if square_target(scene, target) else {})


def square_target(scene: SceneSpec, target: str) -> bool:
    """Whether the object must be squared to the target (a block to stack on, a square hole)."""
    objects = {o.name: o for o in scene.objects}
    if target in objects:
        return objects[target].kind == "box"
    return any(f.name == target.split("/")[0] and f.kind == "hole_block" for f in scene.fixtures)


def joint_numbers(s: WorldState, s0: WorldState, joint: str) -> dict[str, float]:
    """Key numbers of an articulated task in one state."""
    j = s.joint(joint)
    lo, hi = s.layout.joint_range[j]
    frac = float((s.joint_q[j] - lo) / max(hi - lo, 1e-9))
    frac0 = float((s0.joint_q[j] - lo) / max(hi - lo, 1e-9))
    h = s.handle(joint)
    return {
        "ee_to_handle": float(np.linalg.norm(s.ee_pos - h)),
        "open_fraction": frac,
        "open_fraction_change": frac - frac0,
        "gripper_opening": float(s.gripper),
        "grasped": float(bool(s.grasp[s.entity(joint)])),
        "robot_touches_fixture": float(contact(s, "robot", joint)),
        "ee_reach": reach(s.ee_pos),
        "handle_reach": reach(h),
        "handle_height": float(h[2]),
    }


# ---- the episode --------------------------------------------------------------------------------------
def timeline(steps: Sequence[int], phases: Sequence[str]) -> tuple[PhaseSpan, ...]:
    """Consecutive runs of one phase label."""
    spans: list[PhaseSpan] = []
    for step, p in zip(steps, phases, strict=True):
        if spans and spans[-1].phase == p:
            spans[-1] = spans[-1].model_copy(update={"end": int(step)})
        else:
            spans.append(PhaseSpan(phase=p, start=int(step), end=int(step)))
    return tuple(spans)


def roles(scene: SceneSpec) -> tuple[str, str]:
    """(subject, target) from the goal: the carried object and where it goes, or (joint, "")."""
    g = scene.goal[0]
    if g.fn in ("opened", "closed", "open_frac"):
        return str(g.args[0]), ""
    return str(g.args[0]), str(g.args[1])


def failure_index(phases: Sequence[str], failing: str | None) -> int:
    """The last state labelled with the failing phase (where the attempt got stuck), else the last."""
    idx = [i for i, p in enumerate(phases) if p == failing]
    return idx[-1] if idx else len(phases) - 1


def _speed_at_end(ep: Episode) -> float:
    """Mean hand speed (m per control step) over the last `STALL_WINDOW` steps."""
    steps = np.asarray(ep.state_steps)
    i0 = int(np.searchsorted(steps, max(int(steps[-1]) - STALL_WINDOW, 0)))
    i0 = min(i0, len(steps) - 2)
    if i0 < 0:
        return 0.0
    d = float(np.linalg.norm(ep.states[-1].ee_pos - ep.states[i0].ee_pos))
    return d / max(int(steps[-1] - steps[i0]), 1)


def _path(ep: Episode) -> float:
    pts = np.array([s.ee_pos for s in ep.states])
    return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()) if len(pts) > 1 else 0.0


def _stall(ep: Episode, goal_dist: float, flags: dict[str, float], events: list[str], what: str) -> None:
    """A hand that stopped while still in the failing phase: it is stuck there (often at the arm's reach)."""
    speed = _speed_at_end(ep)
    flags["end_speed"] = speed
    if speed < STALL_SPEED and ep.phases[-1] == ep.failing_phase:
        s = ep.states[-1]
        flags["stalled"] = 1.0
        flags["stall_reach"] = reach(s.ee_pos)
        events.append(f"The hand stopped moving ({speed * 1000:.1f} mm/step over the last {STALL_WINDOW} "
                      f"steps) {goal_dist:.3f} m from {what}, at {reach(s.ee_pos):.3f} m from the robot "
                      "base.")


def carry_events(ep: Episode, obj: str, target: str) -> tuple[list[str], dict[str, float]]:
    """Grasp gained/lost, slip, push, wrong target, closing on nothing, stall."""
    st, steps, s0 = ep.states, [int(x) for x in ep.state_steps], ep.states[0]
    held = [bool(s.grasp[s.entity(obj)]) for s in st]
    d_obj = [float(np.linalg.norm(s.ee_pos - s.position(obj))) for s in st]
    to_tgt = [float(np.linalg.norm(s.position(obj)[:2] - s.position(target)[:2])) for s in st]
    events: list[str] = []
    flags: dict[str, float] = {"ee_path": _path(ep), "min_ee_to_object": min(d_obj),
                               "max_object_bottom": max(bottom(s, obj) for s in st) - bottom(s0, obj)}
    first = held.index(True) if any(held) else None
    before = st[: first if first is not None else len(st)]
    i_min = int(np.argmin(d_obj[: len(before)] or d_obj))
    flags["pushed"] = max(float(np.linalg.norm(s.position(obj)[:2] - s0.position(obj)[:2])) for s in before)
    if flags["pushed"] > 0.01:
        events.append(f"Before any grasp the object was pushed {flags['pushed']:.3f} m across the table.")
    near = [s for s, d in zip(before, d_obj, strict=False) if d < 0.05]
    if near:
        _closing(ep.scene, obj, near, flags, events)
    if first is None:
        events.append(f"The object was never grasped; the hand came within {min(d_obj):.3f} m of it "
                      f"(t={steps[i_min] * DT:.1f} s).")
        if near and flags["min_opening_near"] < 0.01:
            flags["closed_empty"] = 1.0
            events.append(f"The fingers closed to {flags['min_opening_near']:.3f} m next to the object "
                          "without holding it.")
        elif near and flags["min_opening_near"] > flags["width_near"] + 0.004:
            flags["never_closed"] = flags["min_opening_near"] - flags["width_near"]
            events.append("Next to the object the fingers never closed below "
                          f"{flags['min_opening_near']:.3f} m; the object is {flags['width_near']:.3f} m "
                          "wide across them.")
        _wrong_target(st[i_min], obj, d_obj[i_min], flags, events)
    else:
        events.append(f"Grasped at t={steps[first] * DT:.1f} s.")
        _grasp_loss(ep, obj, held, to_tgt, first, flags, events)
    if ep.failing_phase in ("release", "place") and min(to_tgt) < 0.05 and to_tgt[-1] > 0.05:
        flags["left_target"] = to_tgt[-1]
        events.append(f"The object was over the target but ended {to_tgt[-1]:.3f} m from it.")
    goal = d_obj[-1] if not held[-1] else float(np.linalg.norm(st[-1].position(obj)[:2]
                                                             - st[-1].position(target)[:2]))
    flags["held_at_end"] = float(held[-1])
    _stall(ep, goal, flags, events, "the object" if not held[-1] else "the target (object held)")
    return events, flags


def _closing(scene: SceneSpec, obj: str, near: list[WorldState], flags: dict[str, float],
             events: list[str]) -> None:
    """How the fingers met the object while the hand was at it (before any grasp)."""
    last = near[-1]
    flags["yaw_misalignment_near"] = max(yaw_misalignment(s, scene, obj) for s in near)
    flags["min_opening_near"] = min(s.gripper for s in near)
    flags["width_near"] = width_across_fingers(last, scene, obj)
    half = last.layout.object_half[last.obj(obj)]
    flags["width_aligned"] = float(2 * (scene.object(obj).size[0] if scene.object_kind(obj) == "cylinder"
                                        else min(half[0], half[1])))
    if flags["yaw_misalignment_near"] > 0.15:
        events.append(f"At the object the gripper was turned {flags['yaw_misalignment_near']:.2f} rad away "
                      f"from the object's faces; the fingers had to span {flags['width_near']:.3f} m "
                      f"({flags['width_aligned']:.3f} m if square to it).")
    if flags["width_near"] > MAX_OPENING - 0.008:
        events.append(f"The object is {flags['width_near']:.3f} m across the fingers, close to or beyond the "
                      f"{MAX_OPENING:.2f} m maximum opening.")
    # how far the hand stayed short of the object, along the direction away from the robot
    o = last.position(obj)[:2]
    out = (o - np.array(ROBOT_BASE[:2])) / max(reach(last.position(obj)), 1e-6)
    best = min(near, key=lambda s: float(np.linalg.norm(s.ee_pos[:2] - o)))
    flags["short_of_object"] = float((o - best.ee_pos[:2]) @ out)
    if flags["short_of_object"] > 0.01:
        events.append(f"The hand never got over the object: at best it stayed {flags['short_of_object']:.3f} "
                      f"m short of it, towards the robot (object {reach(last.position(obj)):.3f} m from the "
                      "base).")


def _wrong_target(s: WorldState, obj: str, d: float, flags: dict[str, float], events: list[str]) -> None:
    """Did the hand go to something else than the object it should pick?"""
    others = [n for n in (*s.layout.objects, *s.layout.regions) if n != obj]
    if not others or d < NEAR:
        return
    dist = {n: float(np.linalg.norm(s.ee_pos - s.position(n))) for n in others}
    name = min(dist, key=dist.__getitem__)
    if dist[name] < d:
        flags["wrong_target"] = 1.0
        events.append(f"At its closest approach the hand was nearer to {name!r} ({dist[name]:.3f} m) than "
                      f"to the object ({d:.3f} m).")


def _grasp_loss(ep: Episode, obj: str, held: list[bool], to_tgt: list[float], first: int,
                flags: dict[str, float], events: list[str]) -> None:
    st, steps = ep.states, [int(x) for x in ep.state_steps]
    gap0 = float(st[first].ee_pos[2] - st[first].position(obj)[2])
    last_held = max(i for i, h in enumerate(held) if h)
    gaps = [float(s.ee_pos[2] - s.position(obj)[2]) - gap0 for s in st[first: last_held + 1]]
    flags["slip"] = max(gaps)
    if flags["slip"] > 0.01:
        events.append(f"While held, the object slid {flags['slip']:.3f} m down in the fingers.")
    for i in range(first + 1, len(held)):
        if held[i - 1] and not held[i] and to_tgt[i] > 0.05:
            h = bottom(st[i], obj) - bottom(st[0], obj)
            if h < 0.005 and flags["slip"] < 0.01:  # let go before it rose: a fumbled grasp, not a slip
                flags["fumbled"] = 1.0
                events.append(f"The grasp held only briefly (until t={steps[i] * DT:.1f} s) and the object "
                              "never left the table.")
                break
            flags.update(grasp_lost=1.0, lost_height=h, lost_to_target=to_tgt[i], lost_phase_index=i)
            events.append(f"The grasp was lost at t={steps[i] * DT:.1f} s ({ep.phases[i - 1]}) with the "
                          f"object {h:.3f} m above its start and {to_tgt[i]:.3f} m from the target.")
            break


def joint_events(ep: Episode, joint: str) -> tuple[list[str], dict[str, float]]:
    """Handle reached, grasp gained/lost while dragging, how far the joint moved, stall."""
    st, steps, s0 = ep.states, [int(x) for x in ep.state_steps], ep.states[0]
    d = [float(np.linalg.norm(s.ee_pos - s.handle(joint))) for s in st]
    held = [bool(s.grasp[s.entity(joint)]) for s in st]
    events: list[str] = []
    flags = {"ee_path": _path(ep), "min_ee_to_handle": min(d),
             "max_open_change": max(abs(joint_numbers(s, s0, joint)["open_fraction_change"]) for s in st)}
    if not any(held):
        events.append(f"The handle was never grasped; the hand came within {min(d):.3f} m of it.")
    else:
        first = held.index(True)
        events.append(f"The handle was grasped at t={steps[first] * DT:.1f} s.")
        for i in range(first + 1, len(held)):
            if held[i - 1] and not held[i]:
                flags["grasp_lost"] = 1.0
                frac = joint_numbers(st[i], s0, joint)["open_fraction"]
                events.append(f"The handle slipped out of the fingers at t={steps[i] * DT:.1f} s with the "
                              f"joint {frac:.2f} open.")
                break
    events.append(f"The joint moved by at most {flags['max_open_change']:.2f} of its range.")
    _stall(ep, d[-1] if not held[-1] else 1.0, flags, events, "the handle" if not held[-1] else "the goal")
    return events, flags


def summarize_failure(episode: Episode, *, episode_id: str | None = None,
                      schema: Sequence[FactorDef] = ()) -> FailureSummary:
    """Phase timeline, privileged numbers at the failure, events and factor readings of one episode.

    `schema` (e.g. the generation program's factors) picks which factors to read; each is placed in the
    family's registered in-distribution range where the family defines it (`reference_schema`)."""
    ep, scene = episode, episode.scene
    subject, target = roles(scene)
    failing = ep.failing_phase or ("done" if ep.success else ep.phases[-1])
    i = failure_index(ep.phases, failing)
    s, s0 = ep.states[i], ep.states[0]
    if target:
        numbers = carry_numbers(s, s0, scene, subject, target)
        events, flags = carry_events(ep, subject, target)
    else:
        numbers = joint_numbers(s, s0, subject)
        events, flags = joint_events(ep, subject)
    ref = reference_schema(scene.family, schema)
    return FailureSummary(
        episode_id=episode_id or f"{scene.family}_{scene.scene_id}_{scene.seed}",
        family=scene.family, instruction=scene.instruction, success=ep.success, failing_phase=failing,
        steps=ep.steps, timeline=timeline(ep.state_steps.tolist(), ep.phases), subject=subject,
        target=target, subject_kind=scene.object_kind(subject) if target else "",
        failure_step=int(ep.state_steps[i]), numbers={k: round(v, 4) for k, v in numbers.items()},
        events=tuple(events), flags={k: round(float(v), 4) for k, v in flags.items()},
        factors=read_factors(scene, ref), keyframes=tuple(str(k) for k in ep.keyframes), scene=scene,
    )
