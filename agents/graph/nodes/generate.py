"""`generate` and `validate`: turn each slot's program into accepted scenes, with bounded repair.

A slot's program runs in the sandbox on factors drawn from its schema; the scenes then face the validity
checks (overlap, settling, reach, the scripted expert solves it — whose trajectory becomes a
demonstration). When the writer fails (an expected failure: `agent_failures`), its program fails its
static checks, raises in the sandbox, or yields too few valid scenes, the exact error (a long one
summarised: `agents.llm.untrusted.summarise_errors`) goes back to the writer (routing loops validate →
generate) at most `max_retries` times — at most 1 + max_retries writer (so LLM) calls per slot, this being
the only retry loop; then the slot is reported failed, with the kind of its last error, and the shortfall
is made up from the family's seed program so every method keeps the same generation budget. Methods
without a writer retry the same program with fresh seeds. Accepted scenes are never dropped by a retry.
Anything else a writer raises is a bug: it stops the run, naming the slot.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from agents.graph.deps import Deps
from agents.graph.nodes.arms import (
    arm_base,
    load_program,
    save_program,
    seed_programs,
    static_errors,
    template_made,
    writer_examples,
)
from agents.graph.nodes.work import agent_failures, error_text, generate_scenes, raised_in, validate_scenes
from agents.graph.state import RoundState, Slot, SlotFailure, new_slot, slot_key
from agents.llm.untrusted import summarise_errors


def _retry_or_fail(slot: Slot, error: str, failure: SlotFailure, max_retries: int) -> None:
    # the error is what the writer's next prompt quotes: a validation error of thousands of entries (a
    # program's `SceneSpec.model_construct` skips validation in the sandbox) arrives as its count and
    # first few
    slot["error"], slot["failure"] = summarise_errors(error), failure
    slot["status"] = "failed" if slot["attempts"] > max_retries else "retry"


def _uses_writer(deps: Deps, slot: Slot) -> bool:
    return deps.config.method_config.writer and not template_made(slot["mode_id"])


def load_mode(deps: Deps, mode_id: str) -> Any:
    """The `DifficultyMode` a writer works from: memory's, or the file `remember` wrote without memory."""
    from memory.types import DifficultyMode

    if deps.memory is not None:
        return deps.memory.mode(mode_id)
    return DifficultyMode.model_validate_json((deps.run.dir("modes") / f"{mode_id}.json").read_text())


def _adapt(deps: Deps, slot: Slot, round_no: int) -> Any | None:
    """The slot's stored program from another family (`template`, a procedural-memory entry) carried over to
    this family's seed program by meaning (`programs.factor_space.adapted_edits`); None when nothing carries
    over (then the writer writes the program from the mode)."""
    from programs.edits import edit_many
    from programs.errors import ProgramRejected
    from programs.factor_space import adapted_edits

    entry = deps.memory.program_entry(slot["template"])
    source = load_program(deps, entry.generation_path[:-3] + ".json")
    base = arm_base(deps, slot["family"])
    try:
        edits = adapted_edits(source, arm_base(deps, entry.family), base,
                              allow_ood=deps.config.writer.allow_ood)
    except ProgramRejected:
        return None
    note = f"adapted from the {entry.family} program {source.hash8} ({entry.id}): {edits}"
    return edit_many(base, edits, mode_id=slot["mode_id"], round_no=round_no, diagnosis=note)


def _write(deps: Deps, slot: Slot, round_no: int) -> tuple[Any | None, str, SlotFailure]:
    """Ask the writer for the slot's program, from the family's seed program and the mode; on a retry the
    feedback is the failing program's exact error. Returns (program, "", "") or (None, the error, its
    kind); only an expected writer failure (`agent_failures`) is caught."""
    base = arm_base(deps, slot["family"])
    feedback = slot["error"] or None
    mode = load_mode(deps, slot["mode_id"])  # a mode that cannot be loaded is a bug, not the writer's failure
    try:
        program = deps.agents.write_generation_program(mode, base, deps.llm, feedback, round_no=round_no,
                                                       examples=writer_examples(deps, mode))
    except agent_failures() as e:  # malformed LLM output, no template for the mode, ...: the writer's failure
        return None, f"the writer failed: {error_text(e)}", "writer"
    if program.family != slot["family"]:
        return None, f"the program is for family {program.family!r}, not {slot['family']!r}", "checks"
    error = static_errors(program)
    return (None, f"static checks failed:\n{error}", "checks") if error else (program, "", "")


def _attempt(deps: Deps, slot: Slot, round_no: int, written: list[str]) -> int:
    """One attempt of one slot: (re)write its program if needed, then generate candidate scenes. Returns
    the writer answers it could not use (0 or 1)."""
    cfg = deps.config
    needs_program = not slot["program"] or (slot["status"] == "retry" and _uses_writer(deps, slot))
    slot["attempts"] += 1
    if needs_program:
        adapted = None
        if slot["template"] and not slot["program"] and deps.memory is not None:
            adapted = _adapt(deps, slot, round_no)
        slot["adapted"] = adapted is not None
        program, error, failure = (adapted, "", "") if adapted is not None else _write(deps, slot, round_no)
        if program is None:
            _retry_or_fail(slot, error, failure, cfg.max_retries)
            return 1
        slot["program"] = save_program(deps, program, round_no)
        written.append(slot["program"])
    program = load_program(deps, slot["program"])
    need = slot["n"] + slot["held"] - len(slot["accepted"]) - len(slot["held_scenes"])
    got = generate_scenes(deps, program, math.ceil(need * cfg.oversample), round_no=round_no,
                          tag=slot["mode_id"], attempt=slot["attempts"])
    if not got.scenes:
        _retry_or_fail(slot, f"generate() failed on every run; first error: {got.errors[0]}", "sandbox",
                       cfg.max_retries)
        return 0
    slot["candidates"], slot["status"], slot["error"], slot["failure"] = got.scenes, "generated", "", ""
    return 0


def generate(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Programs → candidate scenes for every pending or retrying slot; count the writer's unusable answers."""
    round_no = state["round"]
    slots: list[Slot] = copy.deepcopy(state["slots"])  # a node never mutates its input
    written = list(state.get("programs", []))
    unusable = dict(state.get("unusable_answers", {}))
    todo = [s for s in slots if s["status"] in ("pending", "retry")]
    tick = deps.reporter.progress("generate: slots", len(todo))
    for slot in todo:
        with raised_in(f"generate: slot {slot_key(slot)} (attempt {slot['attempts'] + 1})"):
            unusable["writer"] = unusable.get("writer", 0) + _attempt(deps, slot, round_no, written)
        tick(None)
    return {"slots": slots, "programs": list(dict.fromkeys(written)), "unusable_answers": unusable}


def _rejections(rows: list[dict[str, Any]]) -> str:
    """What the writer reads when too few scenes passed: counts per reason, one message per reason."""
    bad = [r for r in rows if not r.get("ok")]
    counts = Counter(r.get("reason") or "unknown" for r in bad)
    first = {}
    for r in bad:
        first.setdefault(r.get("reason") or "unknown", r.get("message", ""))
    lines = [f"{len(bad)} of {len(rows)} scenes failed validation:"]
    lines += [f"- {reason} ({n}×), e.g.: {first[reason]}" for reason, n in counts.most_common()]
    return "\n".join(lines)


def _accept(slot: Slot, rows: list[dict[str, Any]]) -> None:
    """Take valid scenes in order: training scenes first, then measurement scenes; drop the surplus."""
    for r in rows:
        if not r.get("ok"):
            continue
        if len(slot["accepted"]) < slot["n"]:
            slot["accepted"].append(r["scene"])
            slot["demos"].append(r["demo"])
        elif len(slot["held_scenes"]) < slot["held"]:
            slot["held_scenes"].append(r["scene"])


def _backfill(deps: Deps, slot: Slot) -> Slot | None:
    """A seed slot that makes up a failed slot's shortfall (None when nothing is missing or the failed
    slot was already the seed distribution)."""
    n, held = slot["n"] - len(slot["accepted"]), slot["held"] - len(slot["held_scenes"])
    if slot["mode_id"] == "seed" or (n <= 0 and held <= 0):
        return None
    gen, train = seed_programs(deps, slot["family"])
    return new_slot(slot["family"], "seed", max(n, 0), max(held, 0), program=gen, train_program=train,
                    backfill_for=slot["mode_id"])


def validate(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Validity checks of every slot's candidates; full slots are accepted, short ones retry or fail."""
    round_no, cfg = state["round"], deps.config
    slots: list[Slot] = copy.deepcopy(state["slots"])
    todo = [s for s in slots if s["status"] == "generated"]
    tick = deps.reporter.progress("validate: scenes", sum(len(s["candidates"]) for s in todo))
    for slot in todo:
        rows = validate_scenes(deps, slot["candidates"], round_no=round_no, tick=tick)
        _accept(slot, rows)
        slot["candidates"] = []
        if slot.get("adapted") and slot["accepted"] and deps.memory is not None:
            # a stored program counts as reused only once its adaptation produced accepted scenes
            deps.memory.record_use(slot["template"], slot["family"], round_no)
        if len(slot["accepted"]) >= slot["n"] and len(slot["held_scenes"]) >= slot["held"]:
            slot["status"], slot["error"], slot["failure"] = "accepted", "", ""
        else:
            _retry_or_fail(slot, _rejections(rows), "invalid_scenes", cfg.max_retries)
    # a slot that failed here or in `generate` (writer, checks, sandbox) hands its shortfall to the seed
    filled = {(s["family"], s["backfill_for"]) for s in slots if s["backfill_for"]}
    extra = [fill for s in slots if s["status"] == "failed" and (s["family"], s["mode_id"]) not in filled
             and (fill := _backfill(deps, s)) is not None]
    return {"slots": slots + extra}


def summary(update: Mapping[str, Any]) -> str:
    slots = update.get("slots", [])
    by = Counter(s["status"] for s in slots)
    acc = sum(len(s["accepted"]) for s in slots)
    return f"{acc} training scenes accepted; slots " + ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
