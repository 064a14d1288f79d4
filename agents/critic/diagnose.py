"""The critic: a failed episode → a `Diagnosis` (which factor, in which phase, why, and the targeted edit
that should recreate the failure).

    summary = summarize_failure(episode)                      # what both critics read
    dx = diagnose(episode, program, None, critic="rules")     # the rules baseline (agents.critic.rules)
    dx = diagnose(episode, program, llm, critic="llm")        # asks `critic_diagnose`, validates, retries

The LLM's answer is checked against the generation program's factor schema and the family's phases; an
unknown factor, a phase that does not exist or an edit outside the allowed range raises
`AnswerError` (an `LLMOutputError`, problem "schema") whose `feedback()` is fed to the next attempt.
After `CriticConfig.retries` retries the last error is raised (the graph passes 0 and retries the episode
itself, `RunConfig.max_retries` times, then reports it undiagnosed). A rules critic that cannot diagnose
the episode raises `ProgramRejected`.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from agents.config import CriticConfig
from agents.critic.edits import build_diagnosis, on_background, targeted_edit
from agents.critic.rules import Candidate, confidence, explain, rank_factors
from agents.critic.summary import FailureSummary, summarize_failure, with_peers
from agents.llm.base import LLM, LLMOutputError
from memory.types import Diagnosis
from programs.errors import ProgramRejected
from programs.factor_space import (
    allowed_choices,
    bounds,
    check_value,
    reference,
)
from programs.model import GenerationProgram
from sim.episode import Episode
from sim.factors import FactorDef
from sim.families import get_family

PROMPT = "critic_diagnose"  # the LLM alone: the evidence and every factor, no ranking
HYBRID_PROMPT = "critic_hybrid"  # the LLM deciding over the rules critic's ranked candidates
CriticKind = Literal["rules", "llm", "random"]
CANDIDATES = 3  # the rules critic's candidates shown to the hybrid LLM critic
REASON_CHARS = 80  # the hybrid answer's reason, at most (grammar-bounded: ~18 tokens)


class DiagnosisOut(BaseModel):
    """What the LLM critic answers (structured output). The explanation comes first on purpose: the model
    writes the fields in schema order, so it reasons over the numbers before it commits to a phase and a
    factor (`agents/llm/README.md`: with `factor` first the 1.5B model named the first listed factor)."""

    explanation: str = Field(description="one or two sentences: how the factor made it fail, citing numbers")
    phase: str = Field(description="phase in which the attempt failed, one of the listed phases")
    factor: str = Field(description="name of the scene factor that most likely caused the failure")
    value: float | str | bool | None = Field(
        None, description="the factor value that should reproduce the failure (a number for number factors, "
                          "one of the choices for choice factors); omit to use the failing scene's value")
    confidence: float = Field(0.5, ge=0.0, le=1.0, description="how sure you are, 0 to 1")


class HybridOut(BaseModel):
    """What the hybrid LLM critic answers: whether it keeps the rules critic's first candidate, the factor
    (an enum of the candidates, `answer_schema`), then a reason of a few words. No phase (the candidates
    were ranked for the phase the episode got stuck in, which the diagnosis names, as the rules critic's
    does: asked for it, the 1.5B model named another in 32 of 40 fresh cases), no value (the failing
    scene's is used) and no confidence (it comes from the rules ranking), so an answer is ~30 tokens. The
    factor comes before the reason, unlike the "alone" answer's: with the reason first the 1.5B model
    copied the failure's event lines into it and then named a factor those lines mentioned (2 of 4
    development cases, both against a right first candidate)."""

    keep: bool = Field(description="true when the first candidate is the cause")
    factor: str = Field(description="the scene factor that caused the failure")
    explanation: str = Field(min_length=1, max_length=REASON_CHARS,
                             description="why, in a few words citing the evidence")


def answer_schema(names: Sequence[str], phases: Sequence[str], *, hybrid: bool) -> type[BaseModel]:
    """The critic's answer model with `factor` and `phase` as enums of `names` and `phases`. On llama.cpp the
    answer is decoded under the schema's grammar, so a factor or phase that does not exist cannot be written
    (rather than written and retried); an endpoint that honours tool schemas does the same. Named
    `DiagnosisOut` either way (the call log and recorded answers key on the schema's name)."""
    base = HybridOut if hybrid else DiagnosisOut
    enums = (("factor", names),) if hybrid else (("phase", phases), ("factor", names))
    fields = {name: (Literal[tuple(values)], Field(description=base.model_fields[name].description))  # type: ignore[valid-type]
              for name, values in enums}
    return create_model("DiagnosisOut", __base__=base, __doc__=base.__doc__, **fields)  # type: ignore[call-overload]


class AnswerError(LLMOutputError):
    """An LLM answer that parsed but names something the program or family does not have."""

    def __init__(self, prompt_name: str, detail: str, raw: str) -> None:
        super().__init__(prompt_name, "schema", detail, raw)


# ---- the two critics ------------------------------------------------------------------------------------


def rules_diagnosis(sm: FailureSummary, program: GenerationProgram,
                    config: CriticConfig = CriticConfig()) -> Diagnosis:
    """The rules critic's diagnosis of a summarised failure (see `agents.critic.rules`). A choice whose
    scene value no edit may use (an unseen value without `allow_ood`) is passed over for the next factor."""
    ranked = usable_ranking(sm, program, config)
    if not ranked:
        raise ProgramRejected(f"program {program.hash8} shares no editable factor with the scene of "
                              f"{sm.episode_id}")
    top = ranked[0]
    r = top.reading
    value = r.value
    if r.type != "choice":  # stay inside the allowed bounds even if the scene was outside them
        lo, hi = bounds(reference(program, r.name), config.allow_ood)
        value = min(max(float(value), lo), hi)
    edit = targeted_edit(program, r.name, value, r.position, config)
    return build_diagnosis(sm, program, r.name, sm.failing_phase, explain(sm, top), edit, "rules",
                           confidence(ranked), config)


def random_diagnosis(sm: FailureSummary, program: GenerationProgram,
                     config: CriticConfig = CriticConfig()) -> Diagnosis:
    """The critic ablated (issue #39): a factor of the failing scene drawn at random — among those the rules
    critic could name, each equally likely whatever the evidence — in the failing phase, with the edit that
    recreates its value (`targeted_edit`). The draw is seeded by the episode, so a rerun names the same."""
    names = {f.name for f in program.factors}

    def usable(r: Any) -> bool:  # a choice only when an edit may use its value
        return r.type != "choice" or r.value in allowed_choices(reference(program, r.name), config.allow_ood)

    readings = [r for r in sm.factors if r.name in names and r.live and usable(r)]
    if not readings:
        raise ProgramRejected(f"program {program.hash8} shares no editable factor with the scene of "
                              f"{sm.episode_id}")
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(sm.episode_id.encode()).digest()[:8], "big"))
    r = readings[int(rng.integers(len(readings)))]
    value = r.value
    if r.type != "choice":
        lo, hi = bounds(reference(program, r.name), config.allow_ood)
        value = min(max(float(value), lo), hi)
    edit = targeted_edit(program, r.name, value, r.position, config)
    return build_diagnosis(sm, program, r.name, sm.failing_phase,
                           f"random factor {r.name} (the critic ablated)", edit, "random", 0.0, config)


def short(value: Any) -> Any:
    """A float at 4 significant digits (the prompt's numbers: 0.07617085977207143 costs the model ~8 prompt
    tokens to read and says no more than 0.07617); anything else as it is."""
    return float(f"{value:.4g}") if isinstance(value, float) else value


def critic_variables(sm: FailureSummary, program: GenerationProgram, config: CriticConfig) -> dict[str, Any]:
    """The variables of the `critic_diagnose` prompt."""
    rows = []
    for r in sm.factors:
        if r.name not in {f.name for f in program.factors} or not r.live:
            continue
        ref = reference(program, r.name)
        allowed = (", ".join(map(repr, allowed_choices(ref, config.allow_ood))) if ref.type == "choice"
                   else "[{:g}, {:g}]".format(*bounds(ref, config.allow_ood)))
        same = r.id_range in (allowed, "{" + allowed.replace("'", "") + "}")
        rows.append({"name": r.name, "group": r.group, "value": short(r.value), "range": r.id_range,
                     "allowed": "" if same else allowed, "note": r.note})
    phases = family_phases(sm.family)
    return {"family": sm.family, "instruction": sm.instruction, "factors": rows, "phases": phases,
            "failing_phase": sm.failing_phase, "summary": sm.text(brief=True), "feedback": ""}


def live_names(sm: FailureSummary, program: GenerationProgram) -> list[str]:
    """The program's factors that change this scene: what a diagnosis may name."""
    return [f.name for f in program.factors if (r := sm.factor(f.name)) is not None and r.live]


def family_phases(family: str) -> list[str]:
    """The phases a diagnosis may name (every phase of the family but `done`)."""
    return [p for p in get_family(family).phases if p != "done"]


def usable_ranking(sm: FailureSummary, program: GenerationProgram, config: CriticConfig) -> list[Candidate]:
    """The rules critic's ranking of the program's factors, without a choice whose scene value no edit may
    use (an unseen value without `allow_ood`)."""
    return [c for c in rank_factors(sm, {f.name for f in program.factors}, ood_first=config.ood_first)
            if c.reading.type != "choice"
            or c.reading.value in allowed_choices(reference(program, c.reading.name), config.allow_ood)]


def hybrid_variables(sm: FailureSummary, program: GenerationProgram, config: CriticConfig,
                     ranked: Sequence[Candidate]) -> dict[str, Any]:
    """The variables of the `critic_hybrid` prompt: the failure's compact evidence (with the peer contrast
    when the round gave peers) and the rules critic's first `CANDIDATES` with their evidence."""
    shown = [{"name": c.reading.name, "value": short(c.reading.value),
              "where": c.reading.note or f"inside its range {c.reading.id_range}",
              "evidence": "; ".join(c.reasons[:2])} for c in ranked[:CANDIDATES]]
    return {"family": sm.family, "instruction": sm.instruction, "phases": family_phases(sm.family),
            "failing_phase": sm.failing_phase, "summary": sm.text(brief=True, compact=True),
            "candidates": shown, "feedback": ""}


def answer_to_diagnosis(out: BaseModel, sm: FailureSummary, program: GenerationProgram,
                        config: CriticConfig, critic_id: str, conf: float | None = None) -> Diagnosis:
    """Validate an LLM answer against the program's schema and the family's phases; `AnswerError` if not.
    Without a proposed value the failing scene's is used (clamped into the allowed bounds); `conf`
    overrides the answer's own confidence (the hybrid critic's comes from the rules ranking)."""
    raw = out.model_dump_json()
    names = live_names(sm, program)
    factor = out.factor.strip()
    if sm.factor(factor) is not None and factor not in names and factor in {f.name for f in program.factors}:
        raise AnswerError(PROMPT, f"factor {factor!r} does not change this scene (like a peg size in a "
                                  f"stacking task); choose one of: {', '.join(names)}", raw)
    if factor not in names:
        close = difflib.get_close_matches(factor, names, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise AnswerError(PROMPT, f"unknown factor {factor!r}.{hint} Choose one of: {', '.join(names)}", raw)
    phases = family_phases(sm.family)
    phase = getattr(out, "phase", sm.failing_phase).strip().lower()  # the hybrid's: where it got stuck
    if phase not in phases:
        raise AnswerError(PROMPT, f"unknown phase {phase!r}; choose one of: {', '.join(phases)}", raw)
    if not out.explanation.strip():
        raise AnswerError(PROMPT, "the explanation is empty; say how the factor made the attempt fail", raw)
    reading = sm.factor(factor)
    assert reading is not None
    proposed = getattr(out, "value", None)
    value = reading.value if proposed is None else proposed
    if proposed is None and reading.type != "choice":  # the scene's value, inside the allowed bounds
        lo, hi = bounds(reference(program, factor), config.allow_ood)
        value = min(max(float(value), lo), hi)
    value, err = check_value(program, factor, value, config.allow_ood)
    if err is not None:
        raise AnswerError(PROMPT, err, raw)
    edit = targeted_edit(program, factor, value, reading.position if proposed is None else
                         _position(reference(program, factor), value), config)
    return build_diagnosis(sm, program, factor, phase, out.explanation.strip(), edit, critic_id,
                           getattr(out, "confidence", 0.5) if conf is None else conf, config)


def _position(ref: FactorDef, value: Any) -> float:
    return 0.0 if ref.type == "choice" else ref.position(value)


def llm_id(llm: LLM) -> str:
    """`backend/model` for the diagnosis's critic id."""
    ident = getattr(getattr(llm, "completer", None), "identity", None) or {}
    model = ident.get("model") if isinstance(ident, dict) else None
    return f"{llm.backend}/{model}" if model else str(llm.backend)


def _images(sm: FailureSummary, llm: LLM, n: int) -> list[Path] | None:
    if not n or not getattr(llm, "supports_images", False):
        return None
    paths = [Path(k) for k in sm.keyframes if Path(k).is_file()]
    return paths[-n:] or None


@dataclass(frozen=True)
class CriticRequest:
    """What the LLM critic is asked about one failure (`critic_request`), and what its answer is read
    against (`critic_answer`)."""

    prompt: str
    variables: dict[str, Any]
    schema: type[BaseModel]
    max_tokens: int
    ranked: list[Candidate]  # the rules critic's ranking the hybrid decides over (empty: "alone")


def critic_request(sm: FailureSummary, program: GenerationProgram, config: CriticConfig) -> CriticRequest:
    """The prompt, variables, answer schema and budget of an LLM diagnosis (`config.llm_prompt`: "hybrid"
    decides among the rules critic's first `CANDIDATES`, "alone" among every factor of the scene)."""
    hybrid = config.llm_prompt == "hybrid"
    ranked = usable_ranking(sm, program, config) if hybrid else []
    names = [c.reading.name for c in ranked[:CANDIDATES]] if hybrid else live_names(sm, program)
    if not names:
        raise ProgramRejected(f"program {program.hash8} shares no editable factor with the scene of "
                              f"{sm.episode_id}")
    schema = answer_schema(names, family_phases(sm.family), hybrid=hybrid)
    if hybrid:
        return CriticRequest(HYBRID_PROMPT, hybrid_variables(sm, program, config, ranked), schema,
                             config.max_tokens_hybrid, ranked)
    return CriticRequest(PROMPT, critic_variables(sm, program, config), schema, config.max_tokens, [])


def critic_answer(out: BaseModel, request: CriticRequest, sm: FailureSummary, program: GenerationProgram,
                  config: CriticConfig, critic_id: str) -> Diagnosis:
    """An LLM critic's answer as a diagnosis (`answer_to_diagnosis`). A hybrid answer that keeps the first
    candidate names it, with the rules ranking's confidence; an override gets 0.5."""
    conf = None
    if request.ranked:
        first = request.ranked[0].reading.name
        if getattr(out, "keep", False):
            out = out.model_copy(update={"factor": first})
        conf = confidence(request.ranked) if getattr(out, "factor", None) == first else 0.5
    return answer_to_diagnosis(out, sm, program, config, critic_id, conf)


def llm_diagnosis(sm: FailureSummary, program: GenerationProgram, llm: LLM,
                  config: CriticConfig = CriticConfig(), feedback: str | None = None) -> Diagnosis:
    """Ask the LLM critic (`critic_request`); retry unusable answers with the error fed back; raise the
    last one."""
    request = critic_request(sm, program, config)
    images = _images(sm, llm, config.max_keyframes)
    note = feedback or ""
    for attempt in range(config.retries + 1):
        try:
            out = llm.structured(request.prompt, {**request.variables, "feedback": note}, request.schema,
                                 images=images, max_tokens=request.max_tokens)
            return critic_answer(out, request, sm, program, config, llm_id(llm))
        except LLMOutputError as e:
            if attempt == config.retries:
                raise
            note = e.feedback()
    raise AssertionError("unreachable")


def diagnose(episode: Episode, program: GenerationProgram, llm: LLM | None = None, *,
             critic: CriticKind = "rules", config: CriticConfig = CriticConfig(),
             episode_id: str | None = None, summary: FailureSummary | None = None,
             feedback: str | None = None, peers: Sequence[tuple[dict[str, Any], bool]] = (),
             background: GenerationProgram | None = None) -> Diagnosis:
    """Diagnose one failed episode of a scene generated by `program` (`background`: the run's
    domain-randomization background, whose draws are not conditions of the failure, `on_background`).

    `critic="rules"` needs no LLM; `critic="llm"` raises `AnswerError`/`LLMOutputError` when every
    attempt was unusable (and lets `LLMBackendError`/`LLMUnsupportedError` through)."""
    if episode.success:
        raise ValueError("the episode succeeded: there is no failure to diagnose")
    sm = summary or summarize_failure(episode, episode_id=episode_id, schema=program.factors)
    if peers:
        sm = with_peers(sm, peers)
    if critic == "rules":
        dx = rules_diagnosis(sm, program, config)
    elif critic == "random":
        dx = random_diagnosis(sm, program, config)
    elif critic != "llm":
        raise ValueError(f"unknown critic {critic!r}; use 'rules', 'llm' or 'random'")
    elif llm is None:
        raise ValueError("critic='llm' needs an llm (or use critic='rules')")
    else:
        dx = llm_diagnosis(sm, program, llm, config, feedback)
    return dx if background is None else on_background(dx, sm, program, config, background)

