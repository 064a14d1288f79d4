"""The training writer: a validated diagnosis → a training program whose staged potential shapes learning
on the difficulty.

    tp = write_training_program(diagnosis, seed_tp, None)              # rules: seed + a phase subgoal
    tp = write_training_program(diagnosis, seed_tp, llm, evidence=ev)  # LLM: one stage, checked, reached

LLM answers are checked in the training language; anything unusable raises `WriterError` whose
`feedback()` the caller passes back as `feedback` on the next call, a bounded number of times.

Emphasis inserts one subgoal just before the stage that covers the diagnosed phase, staging that phase
more finely (centre over the object before closing, a first secure centimetre of lift, halfway to the
target while holding, centred over the target before letting go, halfway through the drag). The family
declares, per phase, which stages cover it and which subgoal of `EMPHASIS` stages it. Its `done`
is `(<next stage's done>) or (<condition>)`, so it stays true whenever the next stage is done and the
completed prefix never shrinks when the later stage completes (the seeds' cumulative style).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agents.llm.base import LLM, LLMOutputError
from agents.writers.answers import SubgoalsOut, goal_roles, stage_functions, stage_schema
from agents.writers.base import WriterConfig, WriterError
from agents.writers.reach import approach_windows, chained, feedback, repair
from memory.types import Diagnosis
from programs.checks import check_training
from programs.model import Subgoal, TrainingProgram
from programs.potential import agreement, stage_reached
from programs.refine import Evidence
from programs.vocab import describe
from sim.families import FAMILIES, get_family

TRAIN_PROMPT = "writer_training"  # the whole ordered list of subgoals (`training_form="subgoals"`)
TRAIN_PROMPT_STAGE = "writer_stage"  # one subgoal inserted into the family's program (the default form)

Stage = tuple[str, str, str]  # (subgoal name, done condition, progress) in the training language


# ---- the emphasis vocabulary: a family names one per phase (`sim.families.phases.Phase.emphasis`) ---------
# Each reads the program's goal roles (`goal_roles`) and gives the subgoal, or None when a role it needs is
# not bound (a carry without a target, a joint program without its test and level).
def _near_object(r: dict[str, str]) -> Stage:
    s = r["subject"]
    return "near_object", f"dist('ee', {s}) < 0.1", f"1 - clip(dist('ee', {s}) / 0.4, 0, 1)"


def _centred_on_object(r: dict[str, str]) -> Stage:
    s = r["subject"]
    return ("centred_on_object", f"xy_dist('ee', {s}) < 0.008 and dist('ee', {s}) < 0.03",
            f"1 - clip(xy_dist('ee', {s}) / 0.03, 0, 1)")


def _secure_lift(r: dict[str, str]) -> Stage:
    s = r["subject"]
    return "secure_lift", f"grasped({s}) and bottom({s}) > 0.015", f"clip(bottom({s}) / 0.015, 0, 1)"


def _to_target(name: str, done: str, progress: str) -> Callable[[dict[str, str]], Stage | None]:
    """An emphasis that carries the subject to the target (`{s}`, `{t}` in `done` and `progress`); None
    without a target role."""

    def stage(r: dict[str, str]) -> Stage | None:
        s, t = r["subject"], r.get("target")
        return None if t is None else (name, done.format(s=s, t=t), progress.format(s=s, t=t))

    return stage


_halfway_to_target = _to_target("halfway", "grasped({s}) and xy_dist({s}, {t}) < 0.12",
                                "1 - clip((xy_dist({s}, {t}) - 0.12) / 0.3, 0, 1)")
_centred_over_target = _to_target("centred_over_target",
                                  "xy_dist({s}, {t}) < 0.015 and bottom({s}) < top({t}) + 0.03",
                                  "1 - clip(xy_dist({s}, {t}) / 0.03, 0, 1)")


def _joint(r: dict[str, str]) -> tuple[str, str, str] | None:
    """(joint, test, level) roles of a program that opens or closes a joint, or None."""
    return (r["subject"], r["test"], r["level"]) if "test" in r and "level" in r else None


def _near_handle(r: dict[str, str]) -> Stage | None:
    if (jtl := _joint(r)) is None:
        return None
    j = jtl[0]
    return "near_handle", f"handle_dist({j}) < 0.1", f"1 - clip(handle_dist({j}) / 0.4, 0, 1)"


def _at_handle(r: dict[str, str]) -> Stage | None:
    if (jtl := _joint(r)) is None:
        return None
    j = jtl[0]
    return "at_handle", f"handle_dist({j}) < 0.015", f"1 - clip(handle_dist({j}) / 0.03, 0, 1)"


def _halfway_along_joint(r: dict[str, str]) -> Stage | None:
    if (jtl := _joint(r)) is None:
        return None
    j, test, level = jtl
    cond = (f"grasped({j}) and (open_frac({j}) >= 0.5 * {level} if {test} == 'opened' "
            f"else open_frac({j}) <= 0.5 + 0.5 * {level})")
    prog = (f"open_frac({j}) / (0.5 * {level}) if {test} == 'opened' "
            f"else (1 - open_frac({j})) / (0.5 - 0.5 * {level})")
    return "halfway", cond, prog


EMPHASIS: dict[str, Callable[[dict[str, str]], Stage | None]] = {
    "near_object": _near_object, "centred_on_object": _centred_on_object, "secure_lift": _secure_lift,
    "halfway_to_target": _halfway_to_target, "centred_over_target": _centred_over_target,
    "near_handle": _near_handle, "at_handle": _at_handle, "halfway_along_joint": _halfway_along_joint,
}


def phase_stage(tp: TrainingProgram, phase: str) -> int | None:
    """Index in `tp` of the stage that covers `phase` (the first of the family's declared stages the program
    has; the verifier for a phase that declares none), or None: a phase the family does not have (a mode
    that reached it from another family through a factor kind), or none of its stages in the program."""
    if tp.family not in FAMILIES.names() or phase not in get_family(tp.family).phase_stages:
        return None
    stages = get_family(tp.family).phase_def(phase).stages
    names = [g.name for g in tp.subgoals]
    return len(names) - 1 if stages is None else next((names.index(n) for n in stages if n in names), None)


def emphasis_stage(tp: TrainingProgram, phase: str) -> tuple[int, Stage] | None:
    """(insert position, (name, condition, progress)) of the family's declared emphasis for `phase` in
    `tp` (before the stage that covers it, `phase_stage`), or None if it cannot be staged."""
    if (k := phase_stage(tp, phase)) is None:
        return None
    declared = get_family(tp.family).phase_def(phase)
    names = [g.name for g in tp.subgoals]
    roles = goal_roles(tp)
    if "subject" not in roles or declared.emphasis is None:
        return None
    spec = EMPHASIS[declared.emphasis](roles)
    if spec is None or spec[0] in names:
        return None
    return k, spec


def emphasise(tp: TrainingProgram, phase: str) -> tuple[int, Subgoal] | None:
    """(insert position, subgoal) that stages `phase` more finely in `tp` (`emphasis_stage`, its `done`
    chained to the next stage's), or None if it cannot."""
    if (found := emphasis_stage(tp, phase)) is None:
        return None
    k, (name, cond, progress) = found
    done = chained(tp.subgoals[k].done, cond)
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


def stage_example(base: TrainingProgram, phase: str) -> dict[str, str] | None:
    """A worked example of the answer for another phase of the family: its declared emphasis stage
    (`emphasis_stage`), as {phase, name, before, condition, progress}; None when no other phase has one."""
    family = get_family(base.family) if base.family in FAMILIES.names() else None
    for other in (family.phase_stages if family else ()):
        if other == phase or (found := emphasis_stage(base, other)) is None:
            continue
        k, (name, cond, progress) = found
        return {"phase": other, "name": name, "before": base.subgoals[k].name, "condition": cond,
                "progress": progress}
    return None


def stage_variables(base: TrainingProgram, diagnosis: Diagnosis) -> dict[str, Any]:
    """Variables of the `writer_stage` prompt: `before`, the stage that covers the failing phase (the new
    subgoal's place, fixed by the answer's schema; None when the family does not say)."""
    k = phase_stage(base, diagnosis.phase)
    return {**training_variables(base, diagnosis), "functions": describe(stage_functions(base)).splitlines(),
            "worked": stage_example(base, diagnosis.phase),
            "before": None if k is None else base.subgoals[k].name}


def free_name(name: str, taken: list[str]) -> str:
    """`name`, or when the program already has a subgoal of that name the first free `name_2`, `name_3`, …:
    a subgoal's name is only its label (the potential reads its condition and progress), so a taken one is
    renamed rather than the answer refused — the 1.5B, asked again at temperature 0, gives the same name."""
    k = 2
    new = name
    while new in taken:
        new, k = f"{name}_{k}", k + 1
    return new


def stage_program(out: Any, base: TrainingProgram, meta: dict[str, Any]) -> TrainingProgram:
    """The base program with the answer's subgoal inserted before `out.before` (renamed when its name is
    taken: `free_name`), checked; `WriterError` on any problem (an expression outside the training
    language, a subgoal that fails the checks)."""
    raw = out.model_dump_json()
    names = [g.name for g in base.subgoals]
    name = free_name(out.name, names)
    k = names.index(out.before)
    try:
        sub = Subgoal(name=name, done=chained(base.subgoals[k].done, out.condition),
                      progress=out.progress, doc=f"staging the {meta.get('phase', '')} phase".strip())
        tp = _with(base, subgoals=[*base.subgoals[:k], sub, *base.subgoals[k:]],
                   **{k2: v for k2, v in meta.items() if k2 != "phase"})
    except ValidationError as e:
        detail = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
        raise WriterError(TRAIN_PROMPT_STAGE, detail, raw) from None
    errors = check_training(tp)
    if errors:
        raise WriterError(TRAIN_PROMPT_STAGE, "the new subgoal fails the checks:\n"
                          + "\n".join(map(str, errors)), raw)
    return tp


# ---- training programs -----------------------------------------------------------------------------------
def _with(base: TrainingProgram, **update: Any) -> TrainingProgram:
    return TrainingProgram.model_validate({**base.model_dump(exclude={"id"}), **update})


def rules_training(diagnosis: Diagnosis, base: TrainingProgram, *, mode_id: str | None = None,
                   round_no: int | None = None, evidence: Evidence | None = None,
                   config: WriterConfig = WriterConfig()) -> TrainingProgram:
    """The seed program with the mode and diagnosis recorded, plus (when `config.emphasis` and the phase
    allows) one subgoal staging the diagnosed phase more finely — kept only if it passes the checks and,
    with `evidence`, agrees with the demonstrations at least as well as the plain program."""
    meta = {"parent_id": base.id, "mode_id": mode_id or base.mode_id,
            "round": base.round if round_no is None else round_no, "diagnosis": diagnosis.text()}
    plain = _with(base, **meta)
    if not config.emphasis:
        return plain
    extra = emphasise(base, diagnosis.phase)
    if extra is None:
        return plain
    k, sub = extra
    staged = _with(plain, subgoals=[*base.subgoals[:k], sub, *base.subgoals[k:]],
                   diagnosis=f"{diagnosis.text()} (emphasis: {sub.name})")
    if check_training(staged):
        return plain
    if evidence is not None and agreement(staged, evidence.episodes) < min(
            agreement(plain, evidence.episodes), evidence.threshold):
        return plain
    return staged


def subgoals_program(out: SubgoalsOut, base: TrainingProgram, meta: dict[str, Any]) -> TrainingProgram:
    """The LLM's subgoals as a checked program over the base's roles; the last `done` is the base's
    verifier (so Φ = m iff the task succeeds). `WriterError` on any problem."""
    raw = out.model_dump_json()
    subs = [s.model_dump() for s in out.subgoals]
    verifier = base.subgoals[-1].done
    note = ""
    if subs[-1]["done"].replace(" ", "") != verifier.replace(" ", ""):
        note = f" (last done replaced by the verifier {verifier!r})"
        subs[-1]["done"] = verifier
    try:
        tp = _with(base, subgoals=[Subgoal(**s) for s in subs],
                   **{**meta, "diagnosis": meta["diagnosis"] + note})
    except ValidationError as e:
        detail = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
        raise WriterError(TRAIN_PROMPT, detail, raw) from None
    errors = check_training(tp)
    if errors:
        raise WriterError(TRAIN_PROMPT, "the subgoals fail their checks:\n" + "\n".join(map(str, errors)),
                          raw)
    return tp


def _reached(tp: TrainingProgram, out: Any, evidence: Evidence, config: WriterConfig) -> TrainingProgram:
    """`tp` when its written stage is reached on `config.stage_reached` of the demonstrations; else the
    stage with its thresholds moved to the expert's quartiles (`config.stage_repair`); else `WriterError`
    with the expert's read-outs, for the model to write another condition."""
    k = [g.name for g in tp.subgoals].index(out.name)
    episodes, need = evidence.episodes, config.stage_reached
    share = stage_reached(tp, episodes, k)
    if share >= need:
        return tp
    windows = approach_windows(tp, k, episodes)
    if config.stage_repair and (fixed := repair(tp, k, out.condition, episodes, need, windows)) is not None:
        return fixed
    raise WriterError(TRAIN_PROMPT_STAGE, feedback(tp, k, out.condition, share, len(episodes), need, windows),
                      out.model_dump_json())


def _same(raw: str) -> str:
    """An answer as compared with an earlier one: its JSON re-serialised when it parses (spacing aside)."""
    try:
        return json.dumps(json.loads(raw), sort_keys=True)
    except ValueError:
        return raw.strip()


def write_training_program(diagnosis: Diagnosis, base: TrainingProgram, llm: LLM | None = None, *,
                           mode_id: str | None = None, round_no: int | None = None,
                           evidence: Evidence | None = None, feedback: str | None = None,
                           config: WriterConfig = WriterConfig()) -> TrainingProgram:
    """A training program for the diagnosed difficulty (rules without an LLM). With `evidence` (expert
    demos) a written stage must be reached on `config.stage_reached` of them (`agents.writers.reach`; else
    its thresholds are moved to the expert's quartiles, or, where no thresholds do, the answer is refused
    and the writer told what the expert's read-outs were). Refinement below the
    agreement threshold is the caller's (the loop's compile step, where the method allows it)."""
    if llm is None:
        return rules_training(diagnosis, base, mode_id=mode_id, round_no=round_no, evidence=evidence,
                              config=config)
    meta = {"parent_id": base.id, "mode_id": mode_id or base.mode_id,
            "round": base.round if round_no is None else round_no, "diagnosis": diagnosis.text()}
    stage = config.training_form == "stage"
    if stage:
        variables = stage_variables(base, diagnosis)
        prompt, schema, budget = (TRAIN_PROMPT_STAGE, stage_schema(base, variables["before"]),
                                  config.max_tokens_stage)
    else:
        prompt, schema, budget = TRAIN_PROMPT, SubgoalsOut, config.max_tokens_subgoals
        variables = training_variables(base, diagnosis)
    note, refused = feedback or "", set()
    for attempt in range(config.retries + 1):
        try:
            out = llm.structured(prompt, {**variables, "feedback": note}, schema, max_tokens=budget)
            tp = (stage_program(out, base, {**meta, "phase": diagnosis.phase}) if stage
                  else subgoals_program(out, base, meta))
            if stage and evidence is not None and config.stage_reached > 0:
                tp = _reached(tp, out, evidence, config)
            return tp
        except LLMOutputError as e:
            # the same answer refused again would get the same feedback: at temperature 0 the model wrote
            # make demo's insert stage three times over, ~25 s of calls that could not help
            if attempt == config.retries or _same(e.raw) in refused:
                raise
            refused.add(_same(e.raw))
            note = e.feedback()
    raise AssertionError("unreachable")
