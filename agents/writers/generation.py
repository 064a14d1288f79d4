"""The generation writer: a difficulty mode (or diagnosis) → a generation program that recreates the
difficulty.

    gen = write_generation_program(mode, base_gen, None)               # rules: one template factor edit
    gen = write_generation_program(mode, base_gen, llm, feedback=err)  # LLM: an edit spec (or new source)

LLM answers are validated (known factors, values inside the allowed ranges, `programs.checks`, the
sandbox's static policy, optionally a sandbox test run; expressions in the training language); anything
unusable raises `WriterError` (an `LLMOutputError`) whose `feedback()` the caller passes back as
`feedback` on the next call, a bounded number of times.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, create_model

from agents.llm.base import LLM, LLMOutputError
from agents.writers.base import ProgramRejected, WriterConfig, WriterError
from memory.types import Diagnosis, DifficultyMode
from programs.checks import check_generation
from programs.edits import edit_many
from programs.factor_space import (
    allowed_choices,
    back_off,
    bounds,
    check_value,
    reference,
    resolve_factor,
    side_edit,
)
from programs.model import GenerationProgram
from programs.source import generation_from_source
from sandbox.policy import check_source
from sandbox.pool import SandboxPool
from sim.factors import EditValue

GEN_PROMPT = "writer_generation"
MAX_EDITS = 4  # factor edits in one answer (the prompt asks for 1 to 4)
RATIONALE_CHARS = 240  # the answer's rationale, at most (grammar-bounded)


class FactorEditOut(BaseModel):
    """One factor edit proposed by the LLM writer."""

    factor: str = Field(description="factor name")
    low: float | None = Field(None, description="new lower end of a number factor's range")
    high: float | None = Field(None, description="new upper end of a number factor's range")
    value: float | str | bool | None = Field(None, description="pin the factor to this single value")
    choices: list[str | float | bool] | None = Field(None, description="new choices of a choice factor")


class GenerationOut(BaseModel):
    """The LLM writer's generation program: factor edits of the base program (or a new source). The
    rationale comes first, as the critic's explanation does (`DiagnosisOut`): reasons before edits."""

    rationale: str = Field("", max_length=RATIONALE_CHARS,
                           description="one sentence: why these scenes recreate the difficulty")
    edits: list[FactorEditOut] = Field(default_factory=list, max_length=MAX_EDITS)
    source: str | None = Field(None, description="a complete new program source, only if asked for")


def generation_schema(names: Sequence[str], allow_source: bool) -> type[BaseModel]:
    """`GenerationOut` with each edit's factor an enum of the base program's factors, 1 to `MAX_EDITS`
    edits, and no `source` unless a new source may be written: on llama.cpp the answer is decoded under
    this grammar, so an unknown factor or a fifth edit cannot be written. (Values stay numbers checked
    after decoding, `_edit_value`: each factor's allowed range is its own.) Named `GenerationOut` either
    way (the call log and recorded answers key on the schema's name)."""
    factor: Any = Literal[tuple(names)]
    edit = create_model("FactorEditOut", __base__=FactorEditOut, __doc__=FactorEditOut.__doc__,
                        factor=(factor, Field(description="factor name")))
    edits = (list[edit], Field(min_length=0 if allow_source else 1, max_length=MAX_EDITS))  # type: ignore[valid-type]
    doc = GenerationOut.__doc__
    if allow_source:
        return create_model("GenerationOut", __base__=GenerationOut, __doc__=doc, edits=edits)
    return create_model("GenerationOut", __doc__=doc,  # the rationale first: reasons before edits
                        rationale=(str, GenerationOut.model_fields["rationale"]), edits=edits)


# ---- generation programs ---------------------------------------------------------------------------------


def _mode_text(mode: DifficultyMode, diagnosis: Diagnosis | None) -> str:
    return f"mode {mode.id}: {mode.description}" + (f" | {diagnosis.text()}" if diagnosis else "")


def rules_generation(mode: DifficultyMode, base: GenerationProgram, *, diagnosis: Diagnosis | None = None,
                     round_no: int | None = None, feedback: str | None = None,
                     config: WriterConfig = WriterConfig()) -> GenerationProgram:
    """The template writer: `programs.edit` of the mode's factor — the diagnosis's own edit when it is
    about this family's factor, else the mode's side of the range. Given `feedback` on a program already
    written for this mode (a repair), it backs the edit off halfway towards the range's centre."""
    source_family = mode.families[0] if mode.families else None
    name = resolve_factor(mode.factor, base, source_family)
    text = _mode_text(mode, diagnosis)
    if feedback and base.mode_id == mode.id and base.parent_id is not None:
        value = back_off(reference(base, name), base.factor(name))
        text = f"{text} | backed off after: {feedback[:300]}"
    elif diagnosis is not None and name == diagnosis.factor and name in diagnosis.edit:
        known = {f.name for f in base.factors}  # the edit and the task choices it holds under
        return edit_many(base, {k: v for k, v in diagnosis.edit.items() if k in known}, diagnosis=text,
                         mode_id=mode.id, round_no=round_no)
    else:
        value = side_edit(reference(base, name), mode.side, mode.values, band=config.band,
                          allow_ood=config.allow_ood)
    return edit_many(base, {name: value}, diagnosis=text, mode_id=mode.id, round_no=round_no)


def _edit_value(e: FactorEditOut, program: GenerationProgram, config: WriterConfig) -> EditValue:
    """One proposed edit as a `programs.edit` value; `ValueError` with a message a model can act on."""
    ref = reference(program, e.factor)
    if e.choices is not None:
        if ref.type != "choice":
            raise ValueError(f"{e.factor!r} is a number factor: give low/high or value, not choices")
        vals = []
        for c in e.choices:
            v, err = check_value(program, e.factor, c, config.allow_ood)
            if err:
                raise ValueError(err)
            vals.append(v)
        return tuple(vals)
    if e.low is not None or e.high is not None:
        if ref.type == "choice" or e.low is None or e.high is None:
            raise ValueError(f"factor {e.factor!r}: a range needs both low and high, on a number factor")
        if e.low > e.high:
            raise ValueError(f"factor {e.factor!r}: low {e.low} is above high {e.high}")
        for v in (e.low, e.high):
            _, err = check_value(program, e.factor, v, config.allow_ood)
            if err:
                raise ValueError(err)
        return (int(e.low), int(e.high)) if ref.type == "int" else (float(e.low), float(e.high))
    if e.value is None:
        raise ValueError(f"factor {e.factor!r}: give low and high, value, or choices")
    v, err = check_value(program, e.factor, e.value, config.allow_ood)
    if err:
        raise ValueError(err)
    return int(v) if ref.type == "int" else v


def _apply(out: Any, mode: DifficultyMode, base: GenerationProgram, want: str,
           pins: dict[str, EditValue], round_no: int | None, config: WriterConfig) -> GenerationProgram:
    """The LLM's edits (or source) as a program; `want` must be edited, `pins` (the diagnosis's task
    context) are added unless the answer set them itself."""
    raw = out.model_dump_json()
    meta = {"mode_id": mode.id, "round": base.round if round_no is None else round_no,
            "diagnosis": f"{_mode_text(mode, None)} | {out.rationale}".strip(" |")}
    program = base
    if getattr(out, "source", None):
        if not config.allow_source:
            raise WriterError(GEN_PROMPT, "a new source was not asked for; give factor edits only", raw)
        try:
            program = generation_from_source(getattr(out, "source", None), parent_id=base.id, **meta)
        except (ValueError, ValidationError, SyntaxError) as e:
            raise WriterError(GEN_PROMPT, f"the new source is not a valid program: {e}", raw) from None
        if program.family != base.family:
            raise WriterError(GEN_PROMPT, f"FAMILY must stay {base.family!r}", raw)
    names = [f.name for f in program.factors]
    changes: dict[str, EditValue] = {}
    dropped: list[str] = []
    for e in out.edits:
        if e.factor not in names:
            close = difflib.get_close_matches(e.factor, names, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise WriterError(GEN_PROMPT, f"unknown factor {e.factor!r}.{hint} Factors: {', '.join(names)}",
                              raw)
        try:
            changes[e.factor] = _edit_value(e, program, config)
        except ValueError as err:
            if e.factor == want or getattr(out, "source", None):
                raise WriterError(GEN_PROMPT, str(err), raw) from None
            # an invalid extra edit of another factor is dropped (and recorded), not fatal: the mode's own
            # edit is what recreates the difficulty, and small models at temperature 0 repeat a bad extra
            dropped.append(str(err))
    if not getattr(out, "source", None) and want not in changes:
        why = f"; dropped: {' | '.join(dropped)}" if dropped else ""
        raise WriterError(GEN_PROMPT, f"edit the mode's factor {want!r} (the edits named "
                                      f"{sorted(changes) or 'nothing'}{why})", raw)
    if dropped:
        meta["diagnosis"] += f" | invalid extra edits dropped: {' | '.join(dropped)}"
    changes = {k: v for k, v in pins.items() if k in names} | changes
    if changes:
        program = edit_many(program, changes, mode_id=meta["mode_id"], round_no=meta["round"],
                            diagnosis=meta["diagnosis"])
    return program


def program_errors(program: GenerationProgram, pool: SandboxPool | None = None) -> list[str]:
    """Static checks (`programs.checks`, the sandbox policy) and, with a pool, one sandbox run with the
    default factors: the messages a writer must fix (empty when the program may be used)."""
    errors = [str(e) for e in check_generation(program)]
    policy = check_source(program.source)
    if policy is not None:
        errors.append(f"{policy}\n{policy.traceback}".strip())
    if not errors and pool is not None:
        result = pool.run(program.source, program.default_factors(), seed=0)
        if result.error is not None:
            errors.append(f"running generate() with the default factors failed: {result.error}\n"
                          f"{result.error.traceback}".strip())
    return errors


def generation_variables(mode: DifficultyMode, base: GenerationProgram, diagnosis: Diagnosis | None,
                         config: WriterConfig) -> dict[str, Any]:
    """Variables of the `writer_generation` prompt."""
    rows = []
    for f in base.factors:
        ref = reference(base, f.name)
        current = f.choices if f.type == "choice" else f.range
        allowed = (list(allowed_choices(ref, config.allow_ood)) if ref.type == "choice"
                   else list(bounds(ref, config.allow_ood)))
        rows.append({"name": f.name, "group": f.group, "type": f.type, "current": current, "allowed": allowed,
                     "doc": f.doc})
    return {"family": base.family, "mode": {"id": mode.id, "description": mode.description,
                                            "factor": mode.factor, "phase": mode.phase, "side": mode.side},
            "diagnosis": diagnosis.text() if diagnosis else "", "factors": rows,
            "source": base.source if config.allow_source else "", "feedback": ""}


def answer_to_program(out: Any, mode: DifficultyMode, base: GenerationProgram, *,
                      diagnosis: Diagnosis | None = None, round_no: int | None = None,
                      pool: SandboxPool | None = None,
                      config: WriterConfig = WriterConfig()) -> GenerationProgram:
    """The LLM writer's answer as the program the loop would use: the mode's factor edited, the
    diagnosis's task context pinned, every check passed (`program_errors`); `WriterError` if not."""
    want = resolve_factor(mode.factor, base, mode.families[0] if mode.families else None)
    pins = ({k: v for k, v in diagnosis.edit.items() if k != diagnosis.factor}
            if diagnosis is not None and diagnosis.factor == want else {})
    program = _apply(out, mode, base, want, pins, round_no, config)
    errors = program_errors(program, pool)
    if errors:
        raise WriterError(GEN_PROMPT, "the program fails its checks:\n" + "\n".join(errors),
                          out.model_dump_json())
    return program


def write_generation_program(mode: DifficultyMode, base: GenerationProgram, llm: LLM | None = None,
                             feedback: str | None = None, *, diagnosis: Diagnosis | None = None,
                             round_no: int | None = None, pool: SandboxPool | None = None,
                             config: WriterConfig = WriterConfig(),
                             examples: Sequence[str] = ()) -> GenerationProgram:
    """A generation program for `mode`, derived from `base` (rules without an LLM; `examples`, worked
    examples from procedural memory, are shown to the LLM writer only). Raises `WriterError`
    when the LLM's answer (after `config.retries` retries) is unusable or fails the checks, and
    `ProgramRejected` when the mode names no factor of this program or the rules have no template for it."""
    if llm is None:
        program = rules_generation(mode, base, diagnosis=diagnosis, round_no=round_no, feedback=feedback,
                                   config=config)
        errors = program_errors(program, pool)
        if errors:  # a template edit of a checked program: a broken base, reported like a writer failure
            raise ProgramRejected("the edited program fails its checks:\n" + "\n".join(errors))
        return program
    resolve_factor(mode.factor, base, mode.families[0] if mode.families else None)  # before asking
    variables = {**generation_variables(mode, base, diagnosis, config), "examples": list(examples)}
    budget = config.max_tokens_source if config.allow_source else config.max_tokens_edit
    schema = generation_schema([f.name for f in base.factors], config.allow_source)
    note = feedback or ""
    for attempt in range(config.retries + 1):
        try:
            out = llm.structured(GEN_PROMPT, {**variables, "feedback": note}, schema, max_tokens=budget)
            return answer_to_program(out, mode, base, diagnosis=diagnosis, round_no=round_no, pool=pool,
                                     config=config)
        except LLMOutputError as e:
            if attempt == config.retries:
                raise
            note = e.feedback()
    raise AssertionError("unreachable")
