"""How a diagnosis is built from the factor a critic names (`build_diagnosis`, for the rules, random and LLM
critics alike): the targeted edit that recreates the factor's value in the failing scene, and the conditions
it holds — the scene's other out-of-distribution factors (`ood_conditions`), less what the run's
domain-randomization background draws anyway (`on_background`)."""

from __future__ import annotations

from typing import Any

from agents.config import CriticConfig
from agents.critic.factors import scene_context
from agents.critic.summary import FailureSummary
from memory.types import Diagnosis, edit_side
from programs.factor_space import allowed_choices, band_edit, bounds, reference, side_of
from programs.model import GenerationProgram
from sim.factors import EditValue


def targeted_edit(program: GenerationProgram, name: str, value: Any, position: float,
                  config: CriticConfig) -> EditValue:
    """The edit that recreates `value` of factor `name`: values at least as extreme (numbers) or the
    choice itself."""
    ref = reference(program, name)
    if ref.type == "choice":
        return value
    return band_edit(ref, float(value), side_of(ref, float(value), position), band=config.band,
                     allow_ood=config.allow_ood)


# the groups whose out-of-distribution values a diagnosis holds: an unseen task choice (a drawer as the
# container) is as much a condition of the failure as a far position
OOD_CONTEXT_GROUPS = ("task", "spatial", "attribute")


def ood_conditions(sm: FailureSummary, program: GenerationProgram, name: str,
                   config: CriticConfig) -> dict[str, EditValue]:
    """The failing scene's other factors that were out of distribution (outside the family's ID range, or
    an unseen choice, in any of `OOD_CONTEXT_GROUPS`), each as the edit that recreates it
    (`targeted_edit`): the conditions the failure happened under. A diagnosis holds them in both
    verification batches, so it claims "`name` fails under these conditions" — a difficulty of several
    factors, which a single factor moved on the seed distribution cannot show (FINDINGS #8). Empty unless
    OOD edits are allowed (`config.allow_ood`, `config.ood_context`)."""
    if not (config.allow_ood and config.ood_context):
        return {}
    names = {f.name for f in program.factors}
    out: dict[str, EditValue] = {}
    for r in sm.factors:
        if r.name == name or r.name not in names or not r.live or r.group not in OOD_CONTEXT_GROUPS:
            continue
        ref = reference(program, r.name)
        if ref.type == "choice":
            if r.value not in (ref.choices or ()) and r.value in allowed_choices(ref, True):
                out[r.name] = r.value
        elif ref.range is not None and not ref.range[0] <= float(r.value) <= ref.range[1]:
            lo, hi = bounds(ref, True)
            out[r.name] = targeted_edit(program, r.name, min(max(float(r.value), lo), hi), r.position, config)
    return out


def build_diagnosis(sm: FailureSummary, program: GenerationProgram, name: str, phase: str, explanation: str,
                    edit: EditValue, critic_id: str, conf: float, config: CriticConfig) -> Diagnosis:
    """The diagnosis of factor `name` in `phase`: its edit, the task choices it matters under and the
    failing scene's other out-of-distribution conditions (`ood_conditions`)."""
    ref = reference(program, name)
    names = {f.name for f in program.factors}
    context = {k: v for k, v in (scene_context(sm.scene, name) if sm.scene else {}).items() if k in names}
    context = {**ood_conditions(sm, program, name, config), **context}
    return Diagnosis(episode_id=sm.episode_id, factor_group=ref.group, factor=name, phase=phase,
                     explanation=explanation, edit={name: edit, **context},
                     side=edit_side(edit, *(ref.range or (None, None))),
                     critic_id=critic_id, confidence=round(conf, 3))


def on_background(dx: Diagnosis, sm: FailureSummary, program: GenerationProgram, config: CriticConfig,
                  background: GenerationProgram) -> Diagnosis:
    """`dx` without the out-of-distribution conditions (`ood_conditions`) that `background` — the run's
    domain-randomization background, on which the diagnosis is verified — draws anyway: there they vary in
    both batches already, so only the failing scene's departures from the background are the conditions
    its failure happened under (the task choices the factor matters under stay)."""
    task = scene_context(sm.scene, dx.factor) if sm.scene else {}
    values = {r.name: r.value for r in sm.factors}
    names = {f.name for f in background.factors}
    drop = {k for k in ood_conditions(sm, program, dx.factor, config)
            if k not in task and k in names and k in values and background.factor(k).contains(values[k])}
    if not drop:
        return dx
    return dx.model_copy(update={"edit": {k: v for k, v in dx.edit.items() if k not in drop}})
