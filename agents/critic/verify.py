"""Verification of a diagnosis: does the diagnosed factor edit recreate the failure more often than an
equally large edit of another factor? (DESIGN §5.6)

Two batches of `n` scenes, drawn in pairs with common random numbers:

- *targeted*: the program with the diagnosed edit (`programs.edit`), the diagnosed factor drawn from its
  edited range, every other factor drawn from the program as it was;
- *control*: the same scenes (same seeds, same other factors) with a factor the diagnosis did not name
  moved by the same amount instead: the same offset from its range's centre and the same band width,
  each as a share of its own in-distribution range (a choice moves to a choice of the same kind: default,
  other seen value, unseen value).

Both batches run through the injected `run_batch` (generation in the sandbox + rollout with the current
policy). A failure in any phase counts (`VerifyConfig.count`, "any"): the test is of the factor; where
the recreated failures end is reported beside it (the most common phase, and the share in the diagnosed
one). A single episode's stuck phase is a noisy label — recreated failures of a right diagnosis ended
12/12 in some phase but 1/12 in the named one, and two batches both failing 12/12 in different phase mixes
read as "validated" (FINDINGS #16) — so `count="named"`, the earlier rule, is kept only as an option.
Episodes whose generation or rollout errored are left out. The verdict:

- *validated*: a one-sided Fisher exact test (H1: targeted failure rate > control) gives p < α;
- *refuted*: the data bound the increase below `min_effect` — the one-sided (1 − α) Agresti–Caffo upper
  confidence bound of (targeted − control) is under it — so the edit does not recreate the failure by an
  amount a difficulty mode is worth;
- *inconclusive* otherwise: too few counted episodes (`min_valid`), the control batch at its ceiling (it
  fails more often than 1 − `min_effect`, leaving no room to show the increase: both batches failing every
  episode is no evidence either way), or neither test decides.

Equal rates alone are never "refuted": 1/6 vs 1/6 bounds nothing. `python -m experiments.table.power` gives
the exact operating characteristics. Common random numbers correlate the two batches positively, which only
makes the independent-samples tests conservative.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from agents.config import CriticConfig, VerifyConfig
from agents.critic.factors import live_under
from common.stats import fisher_greater, upper_bound
from memory.types import Diagnosis, Verdict, VerdictStatus
from programs.edits import edit, edit_many
from programs.factor_space import family_factors, kind_of, magnitude, matched_edit, reference, seen_movable
from programs.model import GenerationProgram
from sandbox.pool import SandboxPool, SandboxTask
from sim.factors import EditValue
from sim.pool import EpisodeJob, EpisodePool, EpisodeResult, PolicyFactory
from sim.scene import SceneSpec

BatchSide = Literal["targeted", "control"]


@dataclass(frozen=True, kw_only=True)
class BatchItem:
    """One scene to generate and roll out."""

    # the (edited) program to run in the sandbox
    program: GenerationProgram
    # flat factor values for `generate(rng, **factors)`
    factors: dict[str, Any]
    # sandbox seed (the program's rng); paired items share it
    seed: int
    # which batch the item belongs to
    arm: BatchSide
    # pair index within the batch
    index: int


class Outcome(Protocol):
    """What `run_batch` returns per item; `sim.pool.EpisodeResult` satisfies it (an `error` attribute,
    when present and not None, leaves the item out of the counts)."""

    success: bool
    failing_phase: str | None


RunBatch = Callable[[Sequence[BatchItem]], Sequence[Outcome]]


def loop_config(test: VerifyConfig, critic: CriticConfig, *, alpha: float, n: int,
                **override: Any) -> VerifyConfig:
    """The `VerifyConfig` the loop's `verify` node uses for a run's test settings (`RunConfig.verify`, its
    `critic`) at significance `alpha` and batch size `n`; `override` changes a field (a benchmark's
    control)."""
    # a batch of n can only be judged if n episodes may count
    return dataclasses.replace(test, alpha=alpha, min_valid=max(1, min(test.min_valid, n)), critic=critic,
                               **override)


@dataclass(frozen=True)
class Verification:
    """The verdict and everything behind it."""

    verdict: Verdict
    targeted: GenerationProgram  # the program with the diagnosed edit (a candidate mode program)
    control: GenerationProgram
    control_factor: str
    control_edit: EditValue
    counts: dict[str, int]  # {arm}_n, {arm}_phase_failures, {arm}_failures (any phase), errors


# ---- the test -------------------------------------------------------------------------------------------
def decide(diagnosis_id: str, t_fail: int, t_n: int, c_fail: int, c_n: int, config: VerifyConfig) -> Verdict:
    """The verdict from the two batches' counts of failures in the diagnosed phase (rules in the module
    docstring)."""
    t_rate = t_fail / t_n if t_n else 0.0
    c_rate = c_fail / c_n if c_n else 0.0
    p = fisher_greater(t_fail, t_n, c_fail, c_n)
    status: VerdictStatus
    if min(t_n, c_n) < config.min_valid:
        status, reason = "inconclusive", f"too few counted episodes (fewer than {config.min_valid} per batch)"
    elif p < config.alpha:
        status, reason = "validated", f"targeted fails more often (p = {p:.3g} < {config.alpha})"
    elif c_rate > 1.0 - config.min_effect:
        status, reason = "inconclusive", (f"control at ceiling ({c_rate:.0%} failures): no room to show an "
                                          f"increase of {config.min_effect:.0%}")
    elif (ub := upper_bound(t_fail, t_n, c_fail, c_n, config.alpha)) < config.min_effect:
        status, reason = "refuted", (f"increase bounded below {config.min_effect:.0%} (upper bound "
                                     f"{ub:+.2f})")
    else:
        status, reason = "inconclusive", f"not significant (p = {p:.3g}) and not bounded below " \
                                         f"{config.min_effect:.0%}"
    return Verdict(diagnosis_id=diagnosis_id, status=status, targeted_failure_rate=t_rate,
                   control_failure_rate=c_rate, statistic=round(t_rate - c_rate, 6), p_value=p,
                   n=min(t_n, c_n), test="fisher_exact_one_sided+agresti_caffo_bound", reason=reason)


# ---- the control edit ------------------------------------------------------------------------------------


def pick_control(diagnosis: Diagnosis, program: GenerationProgram, rng: np.random.Generator,
                 config: VerifyConfig) -> str:
    """A factor the diagnosis did not name: same type (number/choice) and a different kind if possible."""
    if config.control_factor is not None:
        if config.control_factor in diagnosis.edit:
            raise ValueError(f"the control factor must differ from the diagnosed one ({diagnosis.factor!r}) "
                             f"and its context ({sorted(diagnosis.edit)})")
        program.factor(config.control_factor)  # KeyError with the known names
        return config.control_factor
    target = reference(program, diagnosis.factor)
    refs = [reference(program, f.name) for f in program.factors if f.name not in diagnosis.edit]
    # a control must change the scenes it runs on (not a block's size when the task is pinned to insert)
    live = live_under(program.family, {k: v for k, v in diagnosis.edit.items()  # pinned values; not ranges
                                       if k != diagnosis.factor and not isinstance(v, tuple | list)})
    known = {f.name for f in family_factors(program.family)}
    pool = [r for r in refs if r.group in config.control_groups and seen_movable(r)
            and (live is None or r.name in live or r.name not in known)]
    if not pool:
        raise ValueError(f"program {program.hash8} has no factor to use as a control for "
                         f"{diagnosis.factor!r}")
    kind = kind_of(program.family, diagnosis.factor)
    tiers = ([r for r in pool if (r.type == "choice") == (target.type == "choice")
              and kind_of(program.family, r.name) != kind],
             [r for r in pool if kind_of(program.family, r.name) != kind], pool)
    best = next(t for t in tiers if t)
    return best[int(rng.integers(len(best)))].name


def control_edit(diagnosis: Diagnosis, program: GenerationProgram, rng: np.random.Generator,
                 config: VerifyConfig = VerifyConfig()) -> tuple[str, EditValue]:
    """(control factor, its edit), matched in magnitude to the diagnosed edit."""
    value = diagnosis.edit.get(diagnosis.factor)
    if value is None:
        raise ValueError(f"diagnosis {diagnosis.id} has no edit of its factor {diagnosis.factor!r}")
    ref = reference(program, diagnosis.factor)
    offset, width = magnitude(ref, value)
    if width == 0.0 and (ref.type == "choice" or ref.range[1] <= ref.range[0]):  # no band of its own
        width = config.critic.band / 2
    name = pick_control(diagnosis, program, rng, config)
    return name, matched_edit(reference(program, name), offset, width, rng, config.critic.allow_ood)


# ---- the batches -----------------------------------------------------------------------------------------
def _own_values(program: GenerationProgram, name: str) -> EditValue:
    """What `program` draws factor `name` from: its range, or its first choice."""
    f = program.factor(name)
    return tuple(f.range) if f.range is not None else f.choices[0]  # type: ignore[index]


def build_batches(diagnosis: Diagnosis, program: GenerationProgram, n: int, rng: np.random.Generator,
                  config: VerifyConfig = VerifyConfig()) -> tuple[list[BatchItem], Verification]:
    """The 2n paired items and a `Verification` shell (verdict not yet decided)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    context = {k: v for k, v in diagnosis.edit.items() if k != diagnosis.factor}
    if context:  # the task choices the diagnosed factor matters under hold in both arms
        program = edit_many(program, context, diagnosis=f"verify context for {diagnosis.id}: {context}")
    targeted = edit(program, diagnosis.factor, diagnosis.edit[diagnosis.factor],
                    diagnosis=f"verify targeted: {diagnosis.text()}")
    if config.control == "moveback":  # the diagnosed factor as the program draws it, nothing else moved
        cname, cvalue = diagnosis.factor, _own_values(program, diagnosis.factor)
        control = program
    else:
        cname, cvalue = control_edit(diagnosis, program, rng, config)
        control = edit(program, cname, cvalue,
                       diagnosis=f"verify control for {diagnosis.id}: {cname} -> {cvalue}")
    items: list[BatchItem] = []
    for i in range(n):
        seed = int(rng.integers(2**31 - 1))
        base = program.sample_factors(np.random.default_rng(seed))
        t_val = targeted.factor(diagnosis.factor).sample(np.random.default_rng([seed, 1]))
        c_val = control.factor(cname).sample(np.random.default_rng([seed, 2]))
        items.append(BatchItem(program=targeted, factors={**base, diagnosis.factor: t_val}, seed=seed,
                               arm="targeted", index=i))
        items.append(BatchItem(program=control, factors={**base, cname: c_val}, seed=seed, arm="control",
                               index=i))
    placeholder = Verdict(diagnosis_id=diagnosis.id, status="inconclusive", targeted_failure_rate=0.0,
                          control_failure_rate=0.0, statistic=0.0, p_value=1.0, n=0)
    return items, Verification(placeholder, targeted, control, cname, cvalue, {})


def count(items: Sequence[BatchItem], outcomes: Sequence[Outcome], phase: str) -> dict[str, int]:
    """Per arm: counted episodes, failures in `phase`, failures in any phase; errored items; and per phase
    the targeted batch's failures ("targeted_in_<phase>")."""
    if len(outcomes) != len(items):
        raise ValueError(f"run_batch returned {len(outcomes)} outcomes for {len(items)} items")
    c = {f"{a}_{k}": 0 for a in ("targeted", "control") for k in ("n", "phase_failures", "failures")}
    c["errors"] = 0
    for item, out in zip(items, outcomes, strict=True):
        if getattr(out, "error", None) is not None:
            c["errors"] += 1
            continue
        c[f"{item.arm}_n"] += 1
        if not out.success:
            c[f"{item.arm}_failures"] += 1
            c[f"{item.arm}_phase_failures"] += int((out.failing_phase or "").lower() == phase)
            if item.arm == "targeted":
                key = f"targeted_in_{(out.failing_phase or 'unknown').lower()}"
                c[key] = c.get(key, 0) + 1
    return c


def observed(counts: dict[str, int]) -> tuple[str | None, float | None]:
    """(the phase most targeted failures ended in, the share of them in the diagnosed phase)."""
    phases = {k.removeprefix("targeted_in_"): v for k, v in counts.items() if k.startswith("targeted_in_")}
    if not phases:
        return None, None
    top = max(sorted(phases), key=lambda p: phases[p])
    return top, round(counts["targeted_phase_failures"] / counts["targeted_failures"], 4)


def run_verification(diagnosis: Diagnosis, program: GenerationProgram, run_batch: RunBatch, *, n: int,
                     rng: np.random.Generator, config: VerifyConfig = VerifyConfig()) -> Verification:
    """Build both batches, run them in one `run_batch` call, count, test; with `config.at_ceiling`
    "without_context", a diagnosis whose control failed at its ceiling under its context is tested again
    alone (`without_context`)."""
    first = _verification(diagnosis, program, run_batch, n=n, rng=rng, config=config)
    context = len(diagnosis.edit) > 1
    if config.at_ceiling == "without_context" and context and at_ceiling(first.verdict, config):
        return without_context(diagnosis, program, run_batch, first, n=n, rng=rng, config=config)
    return first


def at_ceiling(verdict: Verdict, config: VerifyConfig) -> bool:
    """Inconclusive because the control batch failed more often than 1 − `min_effect` (`decide`)."""
    return verdict.status == "inconclusive" and verdict.control_failure_rate > 1.0 - config.min_effect


def without_context(diagnosis: Diagnosis, program: GenerationProgram, run_batch: RunBatch,
                    first: Verification, *, n: int, rng: np.random.Generator,
                    config: VerifyConfig) -> Verification:
    """The diagnosed factor's edit tested alone on `program` (the context's other factors as the program
    draws them), after `first` found the control at its ceiling under the context; the verdict says so
    (`Verdict.context_dropped`) and the counts keep the first test's under `context_*`."""
    again = _verification(diagnosis.without_context(), program, run_batch, n=n, rng=rng, config=config)
    reason = (f"tested without its context (under it the control failed "
              f"{first.verdict.control_failure_rate:.0%}, at its ceiling): {again.verdict.reason}")
    verdict = again.verdict.model_copy(update={"reason": reason, "context_dropped": True})
    before = {f"context_{k}": v for k, v in first.counts.items()}
    return dataclasses.replace(again, verdict=verdict, counts={**again.counts, **before})


def _verification(diagnosis: Diagnosis, program: GenerationProgram, run_batch: RunBatch, *, n: int,
                  rng: np.random.Generator, config: VerifyConfig) -> Verification:
    """One test: both batches in one `run_batch` call, counted, decided."""
    items, shell = build_batches(diagnosis, program, n, rng, config)
    counts = count(items, list(run_batch(items)), diagnosis.phase)
    key = "failures" if config.count == "any" else "phase_failures"
    verdict = decide(diagnosis.id, counts[f"targeted_{key}"], counts["targeted_n"],
                     counts[f"control_{key}"], counts["control_n"], config)
    top, share = observed(counts)
    verdict = verdict.model_copy(update={"counted": config.count, "observed_phase": top,
                                         "phase_share": share})
    return Verification(verdict, shell.targeted, shell.control, shell.control_factor, shell.control_edit,
                        counts)


def verify(diagnosis: Diagnosis, program: GenerationProgram, run_batch: RunBatch, *, n: int,
           rng: np.random.Generator, config: VerifyConfig = VerifyConfig()) -> Verdict:
    """Targeted-edit vs control batches of `n` episodes each → validated / refuted / inconclusive."""
    return run_verification(diagnosis, program, run_batch, n=n, rng=rng, config=config).verdict


def refuted_share(verdicts: Sequence[Verdict]) -> float:
    """Share of verdicts that were refuted (the reported metric); 0 for none."""
    return sum(v.status == "refuted" for v in verdicts) / len(verdicts) if verdicts else 0.0


# ---- a real run_batch: sandbox generation + episode rollouts -----------------------------------------------
@dataclass(frozen=True)
class Errored:
    """The outcome of an item that could not be generated or rolled out."""

    error: str
    success: bool = False
    failing_phase: str | None = None


def sandbox_run_batch(pool: SandboxPool, rollout: Callable[[list[SceneSpec]], Sequence[Outcome]]) -> RunBatch:
    """A `RunBatch` that generates each item's scene in the sandbox (`pool.run_many`), then rolls the
    scenes out with `rollout` (e.g. `episode_rollout`); a program error becomes an `Errored` outcome."""

    def run(items: Sequence[BatchItem]) -> list[Outcome]:
        """Generate every item's scene, roll out those that were made, keep the item order."""
        tasks = [SandboxTask(source=i.program.source, factors=i.factors, seed=i.seed) for i in items]
        results = pool.run_many(tasks)
        outcomes: list[Outcome | None] = [None] * len(items)
        scenes, where = [], []
        for k, res in enumerate(results):
            if res.error is not None:
                outcomes[k] = Errored(error=f"generation failed: {res.error}")
            else:
                scenes.append(res.scenes[0])
                where.append(k)
        rolled = list(rollout(scenes)) if scenes else []
        if len(rolled) != len(scenes):
            raise ValueError(f"rollout returned {len(rolled)} outcomes for {len(scenes)} scenes")
        for k, out in zip(where, rolled, strict=True):
            outcomes[k] = out
        return [o if o is not None else Errored(error="not run") for o in outcomes]

    return run


def episode_rollout(pool: EpisodePool, policy: Literal["expert"] | PolicyFactory, *,
                    max_steps: int | None = None) -> Callable[[list[SceneSpec]], list[EpisodeResult]]:
    """Roll scenes out on a `sim.pool.EpisodePool` with `policy` (a picklable factory, e.g.
    `coda_policy.evaluate.CheckpointPolicy(path)`); nothing is saved."""

    def rollout(scenes: list[SceneSpec]) -> list[EpisodeResult]:
        """One episode per scene, results in scene order."""
        return pool.run([EpisodeJob(scene=s, policy=policy, max_steps=max_steps) for s in scenes])

    return rollout
