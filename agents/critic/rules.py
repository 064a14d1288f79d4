"""The rules critic: a baseline that names the factor most likely responsible for a failure from evidence
alone — no language model.

Each factor gets a score

    relevance(failing phase, factor kind) × (0.3 + how atypical its value is on its hard side)
        × evidence multipliers from privileged numbers at the failure

- *relevance*: which kinds of factor can break which phase (object yaw and size break grasps, mass and
  friction break lifts and carries, the target's position breaks transport, ...): the failing phase's row,
  which the family declares with its phases (`sim.families.phases.Phase.relevance`); a phase the family
  does not declare is an error, not a default.
- *atypicality*: where the scene's value sits in the family's in-distribution range (`FactorReading.
  position`), counted on the side that makes the task harder (low friction, high mass, a tight hole;
  both sides for positions, yaws and sizes).
- *evidence*: the episode's own numbers, and the round's other episodes of the family (`Contrast`: a
  factor whose values like this one fail clearly more often than the rest).
  A hand that stalled far out multiplies the position factors of
  what it was reaching for by how much each pushed that point outward; a gripper turned away from the
  object's faces multiplies its yaw; an object that slid out of the fingers multiplies mass and friction;
  a hand that went to the wrong thing multiplies appearance and language factors; and so on.

Out-of-distribution values come first: when the failing scene has factors outside the family's training
ranges (or unseen choices), the ranking is over those, and the in-distribution ones follow (`ood_first`).
The policy was trained on the in-distribution ranges and solves most such scenes, so a failure where some
factors left them is first explained by those; in Table 1's round 1 the scores above named an
in-distribution factor (a size, a mass) on 4 of 6 failures of three-factor variants, each refuted
(FINDINGS #16).

Factors the evidence scores alike are ordered by a hash of the episode and the factor, or by name
(`tie_order`, `CriticConfig.ties`).

The top factor becomes the diagnosis, with a targeted edit that recreates the failing scene's value
(a band around it, on its side of the range) and a confidence from the margin over the runner-up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from agents.critic.factors import FactorReading
from agents.critic.summary import FailureSummary
from programs.factor_space import hard_side, kind_of
from sim.builder import ROBOT_BASE
from sim.families import get_family

OTHER = 0.3  # relevance of a kind the phase's row does not list (and of factors we know nothing about)
BASE = 0.3  # score floor for a typical value: evidence alone can still name a factor


def relevance(family: str, phase: str) -> Mapping[str, float]:
    """Factor kind → how plausibly it breaks `phase` of `family` (the family's declared row); KeyError for a
    phase the family does not have."""
    return get_family(family).phase_def(phase).relevance


def hard_atypicality(r: FactorReading, side: int | None) -> float:
    """How far the value sits towards the hard side `side` of its range (0 at the centre or on the easy
    side; both sides count when `side` is None)."""
    p = float(r.position)
    return min(abs(p) if side is None or r.type == "choice" else max(side * p, 0.0), 2.0)


@dataclass
class Candidate:
    """One factor's score and the evidence behind it."""

    reading: FactorReading
    kind: str
    relevance: float
    phase: str = ""
    side: int | None = None  # the hard side of the factor's range in this phase (None: both)
    multiplier: float = 1.0
    reasons: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        """relevance × (floor + hard-side atypicality) × evidence."""
        return float(self.relevance * (BASE + hard_atypicality(self.reading, self.side)) * self.multiplier)

    def boost(self, factor: float, reason: str) -> None:
        """Multiply the evidence by `factor` (> 1) and say why."""
        if factor > 1.0:
            self.multiplier *= factor
            self.reasons.append(reason)


Cands = dict[str, Candidate]


# ---- evidence -------------------------------------------------------------------------------------------
def _by_kind(c: Cands, *kinds: str) -> list[Candidate]:
    return [x for x in c.values() if x.kind in kinds]


def _reach_push(sm: FailureSummary, c: Cands, kinds: tuple[str, ...], point: str) -> None:
    """Multiply each position factor of the thing the hand reached for by how much its value pushed that
    point away from the robot (m beyond the range centre, along the reach direction)."""
    for x in _by_kind(c, *kinds):
        r = x.reading
        if r.lo is None or r.hi is None or not r.name.endswith(("_x", "_y")):
            continue
        off = float(r.value) - (r.lo + r.hi) / 2
        axis = 0 if r.name.endswith("_x") else 1
        sib = sm.factor(r.name[:-1] + ("y" if axis == 0 else "x"))
        p = np.array([float(r.value), 0.0])
        p[1 - axis] = float(sib.value) if sib is not None and sib.type != "choice" else 0.0
        rel = p - np.array(ROBOT_BASE[:2])
        push = off * rel[axis] / max(float(np.linalg.norm(rel)), 1e-6)
        x.boost(1.0 + max(push, 0.0) / 0.02,
                f"{r.name} = {r.value:.3f} puts {point} {push:.3f} m further from the robot than the "
                "middle of its range")


def _ev_reach(sm: FailureSummary, c: Cands) -> None:
    f, held = sm.flags, sm.flags.get("held_at_end", 0.0) > 0
    if not sm.target:  # articulated: the handle moves with the fixture
        if f.get("stalled") or f.get("min_ee_to_handle", 0.0) > 0.03:
            _reach_push(sm, c, ("fixture_pos",), "the handle")
        return
    if f.get("stalled"):
        if held:
            _reach_push(sm, c, ("target_pos",), "the target")
        else:
            _reach_push(sm, c, ("subject_pos",), "the object")
    elif sm.failing_phase == "approach" and f.get("min_ee_to_object", 0.0) > 0.03:
        _reach_push(sm, c, ("subject_pos",), "the object")
    short = f.get("short_of_object", 0.0)
    if short > 0.01 and not f.get("stalled") and sm.failing_phase in ("approach", "grasp", "lift"):
        _reach_push(sm, c, ("subject_pos",), "the object")
        for x in _by_kind(c, "subject_pos"):
            x.boost(1.0 + short / 0.01, f"the hand stayed {short:.3f} m short of the object")


def _ev_grasp(sm: FailureSummary, c: Cands) -> None:
    f = sm.flags
    mis, width = f.get("yaw_misalignment_near", 0.0), f.get("width_near", 0.0)
    aligned = f.get("width_aligned")
    for x in _by_kind(c, "subject_yaw"):
        x.boost(1.0 + mis / 0.15, f"the gripper was {mis:.2f} rad off the object's faces when it closed")
        if width > 0.072 and aligned is not None and aligned < 0.072:
            x.boost(2.0, f"turned, the object spanned {width:.3f} m across the fingers "
                         f"({aligned:.3f} m square)")
    if width > 0.072 and (aligned is None or aligned >= 0.072):
        for x in _by_kind(c, "subject_size", "subject_shape"):
            x.boost(3.0, f"the object is {width:.3f} m across the fingers, about the 0.08 m maximum opening")
    if f.get("never_closed"):
        for x in _by_kind(c, "subject_size"):
            x.boost(1.0 + f["never_closed"] / 0.01 * (1.0 if x.reading.position < 0 else 0.3),
                    f"the fingers stopped {f['never_closed']:.3f} m short of the object's width")
    if f.get("closed_empty"):
        for x in _by_kind(c, "subject_size", "subject_pos", "subject_yaw"):
            x.boost(1.5, "the fingers closed on nothing next to the object")
    if f.get("fumbled"):
        for x in _by_kind(c, "subject_size", "subject_pos", "subject_yaw", "subject_shape"):
            x.boost(1.5, "the grasp held only for a moment before the object left the table")
    if f.get("pushed", 0.0) > 0.01:
        for x in _by_kind(c, "friction", "mass"):
            if x.reading.position < -0.3:
                x.boost(1.0 + f["pushed"] / 0.02, f"the object slid {f['pushed']:.3f} m when touched "
                                                  f"({x.reading.name} on the low side)")


def _ev_hold(sm: FailureSummary, c: Cands) -> None:
    f = sm.flags
    slip, lost = f.get("slip", 0.0), f.get("grasp_lost", 0.0)
    if slip > 0.01 or lost:
        what = (f"the grasp was lost {f.get('lost_height', 0.0):.3f} m up" if lost
                else f"the object slid {slip:.3f} m in the fingers")
        for x in _by_kind(c, "mass", "friction"):
            x.boost(2.0 + slip / 0.02, what)
        if sm.failing_phase in ("pull", "push"):
            for x in _by_kind(c, "fixture_yaw", "joint_init", "handle_standoff"):
                x.boost(2.0, "the handle slipped out of the fingers while dragging")


def _ev_target(sm: FailureSummary, c: Cands) -> None:
    f, n = sm.flags, sm.numbers
    if f.get("left_target"):
        for x in _by_kind(c, "target_size", "friction", "subject_shape"):
            x.boost(1.8, f"the object came off the target after release ({f['left_target']:.3f} m away)")
    yaw = n.get("yaw_to_target", 0.0)
    if sm.failing_phase in ("align", "place", "insert") and yaw > 0.1:
        for x in _by_kind(c, "target_yaw", "subject_yaw"):
            x.boost(1.0 + yaw / 0.1, f"the piece was {yaw:.2f} rad out of square with the target")


def _ev_perception(sm: FailureSummary, c: Cands) -> None:
    f = sm.flags
    if f.get("wrong_target") or f.get("ee_path", 1.0) < 0.05:
        why = "the hand went to the wrong thing" if f.get("wrong_target") else "the hand barely moved"
        for x in _by_kind(c, "appearance", "language", "task_kind", "target_kind"):
            x.boost(3.0, why)


CONTRAST_WEIGHT = 5.0  # evidence multiplier per unit of failure-rate gap among the round's peers
CONTRAST_P = 0.2  # a gap counts only when the peers support it at least this well (one-sided Fisher)
# a gap this well supported lifts the factor's relevance to at least OTHER: the phase table and the
# round-object discount are priors about the scripted expert's physics, and a learned policy may fail on a
# factor they rank low (a yaw that breaks its approach, FINDINGS #3)
CONTRAST_STRONG_P = 0.05


def _ev_contrast(sm: FailureSummary, c: Cands) -> None:
    """The round's other episodes of the family: a factor whose values like this scene's fail clearly more
    often than the rest is multiplied by 1 + CONTRAST_WEIGHT × the gap. This is the only evidence that
    compares episodes (the rest reads this one), and the one that names a factor the phase table ranks low
    (a yaw that makes the approach fail)."""
    for name, k in sm.contrast.items():
        if name in c and k.gap > 0 and k.p_value < CONTRAST_P:
            if k.p_value < CONTRAST_STRONG_P:  # the data implicate it: no phase-table prior may rule it out
                c[name].relevance = max(c[name].relevance, OTHER)
            c[name].boost(1.0 + CONTRAST_WEIGHT * k.gap,
                          f"{k.near_failed}/{k.near} of the round's episodes with {name} like this failed, "
                          f"against {k.far_failed}/{k.far} of the others")


EVIDENCE: tuple[Callable[[FailureSummary, Cands], None], ...] = (
    _ev_reach, _ev_grasp, _ev_hold, _ev_target, _ev_perception, _ev_contrast)


def out_of_distribution(r: FactorReading) -> bool:
    """The value lies outside the family's in-distribution range, or is a choice the family never shows."""
    return abs(float(r.position)) > 1.0


def rank_factors(sm: FailureSummary, names: set[str] | None = None, *, ood_first: bool = False,
                 ties: str = "episode") -> list[Candidate]:
    """Every factor of the summary (restricted to `names`, e.g. the program's schema), best first; with
    `ood_first` the out-of-distribution ones (`out_of_distribution`) before all others; factors scored alike
    in the order `ties` names (`tie_order`)."""
    table = relevance(sm.family, sm.failing_phase)
    c: Cands = {}
    for r in sm.factors:
        if (names is not None and r.name not in names) or not r.live:
            continue
        kind = kind_of(sm.family, r.name)
        c[r.name] = Candidate(reading=r, kind=kind, relevance=table.get(kind, OTHER), phase=sm.failing_phase,
                              side=hard_side(sm.family, r.name, sm.failing_phase))
    if sm.subject_kind in ("cylinder", "sphere"):  # a round object looks the same at every yaw
        for x in _by_kind(c, "subject_yaw"):
            x.relevance *= 0.2
    for rule in EVIDENCE:
        rule(sm, c)
    return sorted(c.values(), key=lambda x: (ood_first and not out_of_distribution(x.reading), -x.score,
                                             tie_order(sm.episode_id, x.reading.name, ties)))


def tie_order(episode_id: str, name: str, ties: str = "episode") -> str:
    """The order of factors the evidence scores alike (`CriticConfig.ties`): "episode", a hash of the
    episode and the name, settles a tie differently from failure to failure, so verification tries each
    tied factor in turn; "name", alphabetical, settles every tie the same way. (On LIBERO-Object, whose
    factors are all choices and read alike in distribution, alphabetical order named `shift` over `start`
    on every failure, FINDINGS #50.)"""
    return name if ties == "name" else hashlib.sha256(f"{episode_id}|{name}".encode()).hexdigest()


def confidence(ranked: list[Candidate]) -> float:
    """The top score's share of the top two, in [0.05, 0.95]: a clear winner is confident."""
    if not ranked:
        return 0.05
    s1 = ranked[0].score
    s2 = ranked[1].score if len(ranked) > 1 else 0.0
    return float(np.clip(s1 / max(s1 + s2, 1e-9), 0.05, 0.95))


def explain(sm: FailureSummary, top: Candidate) -> str:
    """One or two sentences citing the numbers."""
    r = top.reading
    where = r.note or f"within its range {r.id_range}"
    val = f"{r.value:.3f}" if isinstance(r.value, float) else repr(r.value)
    because = "; ".join(top.reasons[:2])
    return (f"The attempt failed in {sm.failing_phase} with {r.name} = {val} ({where})"
            + (f": {because}." if because else "."))
