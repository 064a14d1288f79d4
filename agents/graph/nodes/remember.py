"""`remember` and `compile` (DESIGN §5.7–5.8).

`remember` files the round's evidence: every rollout as an episodic entry (with its diagnosis), every
verdict, and each validated diagnosis under a difficulty mode (joined or founded). Without memory (the
critic-no-memory baseline) a validated diagnosis becomes a mode of this round only, written to modes/.

`compile` turns each validated (mode, family) into its two programs: a training program (Text2potential:
written, checked, agreement with the round's expert demos, refined below the threshold) and a generation
program that recreates the difficulty. With memory, the pair is indexed by mode for every later round and
every family that shares the factor. Each program is written with at most 1 + max_retries writer (so LLM)
calls, each fed the previous error — the only retry loop; an unexpected exception from a writer stops the
run, naming the (mode, family).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.graph.deps import Deps
from agents.graph.nodes.arms import (
    arm_base,
    save_program,
    seed_training,
    static_errors,
    writer_examples,
)
from agents.graph.nodes.rollout import outcomes, scene_id
from agents.graph.nodes.work import agent_failures, error_text, raised_in, retry_feedback
from agents.graph.rundir import read_json, write_json
from agents.graph.state import RoundState


def _records(deps: Deps, state: RoundState) -> list[tuple[str, dict[str, Any]]]:
    return [(rel, read_json(deps.run.abs(rel))) for rel in state.get("diagnoses", [])]


def _episodes_to_memory(deps: Deps, state: RoundState, recs: list[tuple[str, dict[str, Any]]]) -> None:
    from memory.types import Diagnosis, EpisodeRecord

    mode_of = {scene_id(s): slot["mode_id"] for slot in state["slots"]
               for s in slot["accepted"] + slot["held_scenes"]}
    dx_of = {rec["episode"]: Diagnosis.model_validate(rec["diagnosis"]) for _, rec in recs}
    records, diagnoses = [], []
    for sid, o in outcomes(deps, state.get("rollouts", [])).items():
        stem = deps.run.abs(o.path).stem
        records.append(EpisodeRecord(episode_id=stem, path=o.path, scene_id=sid, family=o.family,
                                     success=o.success, failing_phase=o.failing_phase, round=state["round"],
                                     mode_id=mode_of.get(sid, "seed")))
        diagnoses.append(dx_of.get(o.path))
    deps.memory.add_episodes(records, diagnoses)


def _local_mode(deps: Deps, dx: Any, family: str, round_no: int) -> str:
    """A mode of this round only (no memory): named like memory names modes, written to modes/."""
    from memory.types import DifficultyMode, slug

    mode_id = "_".join([slug(dx.factor), slug(dx.phase)] + ([dx.side] if dx.side in ("low", "high") else []))
    mode = DifficultyMode(id=mode_id, description=f"{dx.factor_key} during {dx.phase}: {dx.explanation}",
                          factor_group=dx.factor_group, factor=dx.factor, phase=dx.phase, side=dx.side,
                          families=(family,), evidence_ids=(dx.episode_id,), diagnosis_ids=(dx.id,),
                          created_round=round_no)
    write_json(deps.run.dir("modes") / f"{mode_id}.json", mode.model_dump(mode="json"))
    return mode_id


def remember(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Evidence and verdicts into memory; validated diagnoses into modes."""
    from memory.types import Diagnosis, Verdict

    recs = _records(deps, state)
    if deps.memory is not None:
        _episodes_to_memory(deps, state, recs)
    modes = []
    for rel, rec in recs:
        if rec.get("verdict") is None:
            continue
        dx, verdict = Diagnosis.model_validate(rec["diagnosis"]), Verdict.model_validate(rec["verdict"])
        if deps.memory is not None:
            mode = deps.memory.add_verdict(dx, verdict, rec["family"], round_no=state["round"])
            mode_id = mode.id if mode is not None else None
        else:
            mode_id = _local_mode(deps, dx, rec["family"], state["round"]) if verdict.status == "validated" \
                else None
        if mode_id:
            modes.append(f"{mode_id}|{rec['family']}")
            if rec.get("mode_id") != mode_id:
                write_json(deps.run.abs(rel), {**rec, "mode_id": mode_id})
    return {"modes": list(dict.fromkeys(modes))}


def _with_retries(deps: Deps, make: Any) -> tuple[Any | None, list[str]]:
    """`make(feedback)` (one writer call) at most 1 + max_retries times until it returns a program without
    errors; an expected writer failure (`agent_failures`) counts as an error and is fed back."""
    expected = agent_failures()
    errors: list[str] = []
    for _ in range(deps.config.max_retries + 1):
        try:
            program, problem = make(retry_feedback(errors))
        except expected as e:  # unusable LLM output, no template, a program failing its checks
            program, problem = None, error_text(e)
        if program is not None and not problem:
            return program, errors
        errors.append(problem)
    return None, errors


def _training_program(deps: Deps, dx: Any, family: str, mode_id: str, round_no: int,
                      demos: list[Any]) -> tuple[Any, dict[str, Any]]:
    """Written, checked and (below the agreement threshold) refined training program for a diagnosis."""
    from programs.checks import check_training, format_errors
    from programs.model import TrainingProgram
    from programs.potential import agreement
    from programs.refine import Evidence, refine

    def make(feedback: str | None) -> tuple[Any, str]:
        tp = deps.agents.write_training_program(dx, seed_training(family), deps.llm, mode_id=mode_id,
                                                round_no=round_no, demos=demos, feedback=feedback)
        return tp, format_errors(check_training(tp))

    tp, errors = _with_retries(deps, make)
    info: dict[str, Any] = {"writer_errors": len(errors)}
    if tp is None:  # the family's seed stages, recorded as serving this mode
        seed = seed_training(family)
        tp = TrainingProgram.model_validate({**seed.model_dump(exclude={"id"}), "parent_id": seed.id,
                                             "diagnosis": f"writer failed: {errors[-1][:500]}"})
        info["fallback"] = "seed training program"
    tp = TrainingProgram.model_validate({**tp.model_dump(exclude={"id"}), "mode_id": mode_id,
                                         "round": round_no})
    threshold = deps.config.compile.agreement_threshold
    if demos:
        info["agreement"] = round_(agreement(tp, demos))
        if info["agreement"] < threshold and deps.config.method_config.refine:
            draft = tp
            tp = refine(tp, Evidence(demos, threshold))
            info["agreement_refined"] = round_(agreement(tp, demos))
            if tp is not draft:  # the refined program's parent, on disk beside it
                info["draft"] = save_program(deps, draft, round_no)
    return tp, info


def round_(x: float) -> float:
    return round(float(x), 4)


def _generation_program(deps: Deps, mode: Any, family: str, round_no: int,
                        dx: Any = None) -> tuple[Any | None, list[str]]:
    def make(feedback: str | None) -> tuple[Any, str]:
        # the validated diagnosis rides along: its edit (and any task choices it holds under) is what the
        # verification confirmed, so the writer recreates exactly that difficulty
        p = deps.agents.write_generation_program(mode, arm_base(deps, family), deps.llm, feedback,
                                                 diagnosis=dx, round_no=round_no,
                                                 examples=writer_examples(deps, mode))
        return p, static_errors(p) or ""

    return _with_retries(deps, make)


def _family_demos(deps: Deps, state: RoundState, family: str) -> list[Any]:
    from sim.episode import Episode

    paths = [d for s in state["slots"] if s["family"] == family for d in s["demos"]]
    paths = paths[:deps.config.compile.max_demos]
    return [Episode.load(deps.run.abs(p)) for p in paths]


def _has_programs(deps: Deps, mode_programs: Mapping[str, list[str]], mode_id: str, family: str) -> bool:
    if mode_programs.get(f"{mode_id}|{family}", [""])[0]:
        return True
    if deps.memory is None:
        return False
    return any(e.family == family for e in deps.memory.programs_for(mode_id, family))


def compile_programs(state: RoundState, deps: Deps) -> dict[str, Any]:
    """A (generation, training) program pair for each validated (mode, family) that has none yet; the
    writer's unusable answers are counted."""
    from agents.graph.nodes.generate import load_mode
    from memory.types import Diagnosis

    r = state["round"]
    mode_programs = dict(state.get("mode_programs", {}))
    written, report = list(state.get("programs", [])), []
    unusable = dict(state.get("unusable_answers", {}))
    recs = [rec for _, rec in _records(deps, state) if rec.get("mode_id")]
    for key in state.get("modes", []):
        mode_id, family = key.split("|")
        if _has_programs(deps, mode_programs, mode_id, family):
            continue  # procedural memory already holds this family's programs for the mode
        dx = Diagnosis.model_validate(next(rec for rec in recs if rec["mode_id"] == mode_id
                                           and rec["family"] == family)["diagnosis"])
        with raised_in(f"compile: mode {mode_id} of family {family}"):
            tp, info = _training_program(deps, dx, family, mode_id, r, _family_demos(deps, state, family))
            train_rel = save_program(deps, tp, r)
            gen, gen_errors = _generation_program(deps, load_mode(deps, mode_id), family, r, dx)
        unusable["writer"] = unusable.get("writer", 0) + info["writer_errors"] + len(gen_errors)
        gen_rel = save_program(deps, gen, r) if gen is not None else ""
        info.update(mode=mode_id, family=family, generation_errors=len(gen_errors), generation=gen_rel,
                    training=train_rel)
        written += [p for p in (train_rel, gen_rel) if p]
        mode_programs[key] = [gen_rel, train_rel]
        if gen is not None and deps.memory is not None:
            deps.memory.add_programs(mode_id, gen.id, tp.id, family,
                                     (gen_rel[:-5] + ".py", train_rel[:-5] + ".py"), round_no=r)
        report.append(info)
    return {"mode_programs": mode_programs, "programs": list(dict.fromkeys(written)), "compiled": report,
            "unusable_answers": unusable}


def summary_remember(update: Mapping[str, Any]) -> str:
    return f"{len(update.get('modes', []))} validated (mode, family) pairs"


def summary_compile(update: Mapping[str, Any]) -> str:
    rep = update.get("compiled", [])
    agr = [c.get("agreement_refined", c.get("agreement")) for c in rep if "agreement" in c]
    tail = f", agreement {min(agr):.2f}–{max(agr):.2f}" if agr else ""
    return f"{len(rep)} program pairs{tail}"
