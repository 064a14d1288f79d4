"""What the critic reads about a failed episode: a phase timeline from the family's predicate labels, the
key privileged numbers at the moment of failure (`geometry`), episode-wide events (`events`), the scene's
factor values placed in the family's in-distribution ranges (`factors`) and, with the round's other
episodes of the family, how each factor separates failures from successes (`contrast`).

`summarize_failure(episode)` returns a `FailureSummary`: structured numbers for the rules critic and
`text()` for an LLM. Both critics see the same evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.critic.contrast import Contrast, contrasts
from agents.critic.events import DT, carry_events, joint_events
from agents.critic.factors import FactorReading, read_factors
from agents.critic.geometry import carry_numbers, joint_numbers
from agents.llm.untrusted import untrusted
from programs.factor_space import reference_schema
from sim.episode import Episode
from sim.factors import FactorDef
from sim.scene import SceneSpec


class PhaseSpan(BaseModel):
    """A stretch of consecutive states with one phase label (control steps, inclusive start)."""

    model_config = ConfigDict(frozen=True)

    phase: str
    start: int
    end: int


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

    def text(self, brief: bool = False, compact: bool = False) -> str:
        """The summary as an LLM reads it; `brief` leaves out what a prompt states elsewhere (the task
        line and the unusual factor values), to save prompt tokens on small local models; `compact` (with
        `brief`) leaves out the phase timeline and the line of privileged numbers too (the hybrid critic's
        prompt: it names the stuck phase, and the events and the candidates' evidence cite the numbers
        that matter)."""
        lines = [] if brief else [f"Family {self.family}; instruction: \"{untrusted(self.instruction)}\"; "
                                  f"{'succeeded' if self.success else 'failed'} after {self.steps} steps "
                                  f"({self.steps * DT:.1f} s); failing phase: {self.failing_phase}."]
        numbers = not (brief and compact)
        if numbers:
            spans = ", ".join(f"{p.phase} {p.start * DT:.1f}-{p.end * DT:.1f} s" for p in self.timeline)
            lines.append(f"Phase timeline: {spans}" + (f" (of {self.steps * DT:.1f} s)." if brief else "."))
        if numbers:
            nums = ", ".join(f"{k} {_fmt(v, k)}" for k, v in self.numbers.items())
            lines.append(f"At the failure (t={self.failure_step * DT:.1f} s): {nums}.")
        lines += [f"- {e}" for e in self.events]
        telling = sorted((c for c in self.contrast.values() if c.gap > 0), key=lambda c: -c.gap)[:3]
        if telling:
            lines.append("Across this round's other episodes of the family: " + "; ".join(
                f"with {untrusted(c.name)} like here {c.near_failed}/{c.near} failed, "
                f"otherwise {c.far_failed}/{c.far}"
                for c in telling) + ".")
        odd = [f for f in self.factors if f.note and f.live]
        if odd and not brief:
            lines.append("Unusual factor values: " + "; ".join(f"{untrusted(f.name)} = "
                                                              f"{untrusted(_fmt(f.value))} ({f.note})"
                                                              for f in odd) + ".")
        return "\n".join(lines)


YES_NO = ("grasped", "robot_touches_object", "object_touches_target", "robot_touches_fixture")


def _fmt(v: Any, key: str = "") -> str:
    if key in YES_NO:
        return "yes" if v else "no"
    if isinstance(v, bool) or not isinstance(v, float | np.floating):
        return str(v)
    return f"{v:.3f}"


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


def with_peers(sm: FailureSummary, peers: Sequence[tuple[dict[str, Any], bool]]) -> FailureSummary:
    """`sm` with a `Contrast` per live factor, from `peers`: the (flat factor values, success) of the
    round's other episodes of the same family."""
    return sm.model_copy(update={"contrast": contrasts(sm.factors, peers)})


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
