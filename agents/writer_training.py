"""Training-program helpers for the writer: the rules writer's phase emphasis and the LLM writer's prompt
variables.

Emphasis inserts one subgoal just before the stage that covers the diagnosed phase, staging that phase
more finely (centre over the object before closing, a first secure centimetre of lift, halfway to the
target while holding, centred over the target before letting go, halfway through the drag). Its `done`
is `(<next stage's done>) or (<condition>)`, so it stays true whenever the next stage is done and the
completed prefix never shrinks when the later stage completes (the seeds' cumulative style).
"""

from __future__ import annotations

from typing import Any

from memory.types import Diagnosis
from programs.model import ROLE_REF, Subgoal, TrainingProgram
from programs.vocab import describe

# diagnosed phase → names of the seed stage that covers it (first found wins; None: the verifier)
PHASE_STAGE: dict[str, tuple[str, ...] | None] = {
    "approach": ("reach",), "grasp": ("grasp",), "lift": ("lift",), "transport": ("carry", "align"),
    "align": ("align", "carry"), "place": None, "insert": None, "release": None, "pull": ("move",),
    "push": ("move",),
}


def goal_roles(tp: TrainingProgram) -> dict[str, str]:
    """Which role is bound to what: {"subject": role of goal[0].args[0], "target": of args[1], "test":
    of goal[0].fn, "level": of args[1] when the program tests a joint (opened/closed)}."""
    out: dict[str, str] = {}
    for role, ref in tp.roles.items():
        m = ROLE_REF.match(ref)
        if not m or m.group(1) != "0":
            continue
        if m.group(2) == "fn":
            out["test"] = role
        elif m.group(3) == "0":
            out["subject"] = role
        elif m.group(3) == "1":
            out["target"] = role
    text = " ".join(g.done + " " + g.progress for g in tp.subgoals)
    if "target" in out and any(f"{fn}(" in text for fn in ("opened", "closed", "open_frac", "handle_dist")):
        out["level"] = out.pop("target")  # opened(joint, level): the second argument is a level
    return out


def _carry_condition(phase: str, s: str, t: str | None) -> tuple[str, str, str] | None:
    """(name, condition, progress) for a carry-an-object task."""
    if phase == "approach":
        return "near_object", f"dist('ee', {s}) < 0.1", f"1 - clip(dist('ee', {s}) / 0.4, 0, 1)"
    if phase == "grasp":
        return ("centred_on_object", f"xy_dist('ee', {s}) < 0.008 and dist('ee', {s}) < 0.03",
                f"1 - clip(xy_dist('ee', {s}) / 0.03, 0, 1)")
    if phase == "lift":
        return "secure_lift", f"grasped({s}) and bottom({s}) > 0.015", f"clip(bottom({s}) / 0.015, 0, 1)"
    if t is None:
        return None
    if phase in ("transport", "align"):
        return ("halfway", f"grasped({s}) and xy_dist({s}, {t}) < 0.12",
                f"1 - clip((xy_dist({s}, {t}) - 0.12) / 0.3, 0, 1)")
    return ("centred_over_target", f"xy_dist({s}, {t}) < 0.015 and bottom({s}) < top({t}) + 0.03",
            f"1 - clip(xy_dist({s}, {t}) / 0.03, 0, 1)")


def _joint_condition(phase: str, j: str, test: str, level: str) -> tuple[str, str, str] | None:
    """(name, condition, progress) for opening/closing a joint."""
    if phase == "approach":
        return "near_handle", f"handle_dist({j}) < 0.1", f"1 - clip(handle_dist({j}) / 0.4, 0, 1)"
    if phase == "grasp":
        return "at_handle", f"handle_dist({j}) < 0.015", f"1 - clip(handle_dist({j}) / 0.03, 0, 1)"
    if phase in ("pull", "push"):
        cond = (f"grasped({j}) and (open_frac({j}) >= 0.5 * {level} if {test} == 'opened' "
                f"else open_frac({j}) <= 0.5 + 0.5 * {level})")
        prog = (f"open_frac({j}) / (0.5 * {level}) if {test} == 'opened' "
                f"else (1 - open_frac({j})) / (0.5 - 0.5 * {level})")
        return "halfway", cond, prog
    return None


def emphasise(tp: TrainingProgram, phase: str) -> tuple[int, Subgoal] | None:
    """(insert position, subgoal) that stages `phase` more finely in `tp`, or None if it cannot."""
    names = [g.name for g in tp.subgoals]
    if phase not in PHASE_STAGE:
        return None
    stages = PHASE_STAGE[phase]
    k = len(names) - 1 if stages is None else next((names.index(n) for n in stages if n in names), None)
    roles = goal_roles(tp)
    if k is None or "subject" not in roles:
        return None
    s = roles["subject"]
    if "test" in roles and "level" in roles:
        spec = _joint_condition(phase, s, roles["test"], roles["level"])
    else:
        spec = _carry_condition(phase, s, roles.get("target"))
    if spec is None or spec[0] in names:
        return None
    name, cond, progress = spec
    done = f"({tp.subgoals[k].done}) or ({cond})"
    return k, Subgoal(name=name, done=done, progress=progress, doc=f"emphasis on the {phase} phase")


def training_variables(base: TrainingProgram, diagnosis: Diagnosis) -> dict[str, Any]:
    """Variables of the `writer_training` prompt."""
    return {
        "family": base.family,
        "roles": [{"name": r, "ref": ref} for r, ref in base.roles.items()],
        "functions": describe().splitlines(),
        "example": [{"name": g.name, "done": g.done, "progress": g.progress} for g in base.subgoals],
        "verifier": base.subgoals[-1].done,
        "diagnosis": diagnosis.text(),
        "phase": diagnosis.phase,
        "feedback": "",
    }
