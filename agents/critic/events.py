"""Episode-wide events of a failed episode, each one sentence for the LLM critic and a machine-readable flag
for the rules critic: grasp gained and lost, slip, an object pushed before the grasp, fingers closing on
nothing or never closing, the hand short of the object, a wrong target, a stalled hand (`carry_events`,
`joint_events`).
"""

from __future__ import annotations

import numpy as np

from agents.critic.geometry import joint_numbers, reach, width_across_fingers, yaw_misalignment
from programs.vocab import bottom
from sim.builder import ROBOT_BASE
from sim.episode import Episode
from sim.scene import SceneSpec
from sim.world import WorldState

DT = 0.05  # seconds per control step (20 Hz)
AT_OBJECT = 0.03  # grip site this close to the object counts as "at it" (m), as the phase labels
STALL_SPEED = 0.002  # mean hand speed (m per control step) below which the hand counts as stopped
STALL_WINDOW = 20  # control steps at the end of the episode over which a stall is judged
MAX_OPENING = 0.08  # the Panda's finger opening (m)


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
    if not others or d < AT_OBJECT:  # at the object: it went to the right thing
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
