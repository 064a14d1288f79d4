"""The records memory stores and the agents exchange (DESIGN §3): `Diagnosis`, `Verdict`, `EpisodeRecord`,
`DifficultyMode`, `ProgramEntry`. Pydantic, JSON round trip; ids are content hashes where the caller does
not choose them, so a resumed run that re-sends a record upserts the same entry."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from common.hashed import ContentHashed
from sim.factors import EditValue
from sim.scene import FactorGroup

Side = Literal["low", "high", "values"]
VerdictStatus = Literal["validated", "refuted", "inconclusive"]


def digest(payload: Any, n: int = 16) -> str:
    """First `n` hex digits of the SHA-256 of `payload`'s canonical JSON."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def slug(text: str) -> str:
    """`text` as a mode-id fragment: lower case, `[a-z0-9_]` only (mode ids become file names)."""
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return s or "x"


def edit_side(value_or_range: Any, lo: float | None = None, hi: float | None = None) -> Side:
    """Which part of a factor's in-distribution range `[lo, hi]` an edit moves into: "low"/"high" for a
    number or range whose midpoint is below/above the range centre, "values" for choices (or when no range
    is known). The critic/verifier calls this with the factor's schema so every agent labels alike."""
    if isinstance(value_or_range, bool | str) or lo is None or hi is None:
        return "values"
    if isinstance(value_or_range, Sequence):
        if len(value_or_range) != 2 or not all(isinstance(v, int | float) for v in value_or_range):
            return "values"
        mid = (float(value_or_range[0]) + float(value_or_range[1])) / 2
    else:
        mid = float(value_or_range)
    return "low" if mid < (lo + hi) / 2 else "high"


class Diagnosis(ContentHashed):
    """The critic's claim about one failed episode: which factor, in which phase, why, and the targeted
    edit that should reproduce the failure (checked by `Verdict`)."""

    episode_id: str  # the failed episode this explains (evidence)
    factor_group: FactorGroup
    factor: str  # factor name in the family's schema, e.g. "obj_yaw"
    phase: str  # phase label of the failure, e.g. "grasp"
    explanation: str
    edit: dict[str, EditValue] = Field(default_factory=dict)  # factor -> pinned value / (lo, hi) / choices
    side: Side | None = None  # see `edit_side`; None = unknown, joins a mode of any side
    critic_id: str = "rules"  # which critic (backend + model) said it
    confidence: float = Field(0.5, ge=0.0, le=1.0)

    @field_validator("phase", "factor")
    @classmethod
    def _norm(cls, v: str) -> str:
        return v.strip().lower()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """Content hash: the same claim about the same episode by the same critic is one diagnosis."""
        return "dx_" + digest(self.model_dump(mode="json", exclude={"id"}))

    @property
    def factor_key(self) -> str:
        return f"{self.factor_group}.{self.factor}"

    def text(self) -> str:
        """One line for embedding and for prompts."""
        edit = ", ".join(f"{k} -> {v}" for k, v in self.edit.items()) or "none"
        return f"{self.factor_key} during {self.phase}: {self.explanation} (edit: {edit})"

    def without_context(self) -> Diagnosis:
        """The same diagnosis with its own factor's edit only (its context, the failing scene's other
        edited factors, dropped)."""
        return self.model_copy(update={"edit": {self.factor: self.edit[self.factor]}})


class Verdict(BaseModel):
    """Outcome of the targeted-edit vs control test for one diagnosis."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    diagnosis_id: str
    status: VerdictStatus
    targeted_failure_rate: float = Field(ge=0.0, le=1.0)  # failures counted by the test, targeted batch
    control_failure_rate: float = Field(ge=0.0, le=1.0)  # same, control batch (another factor, same size)
    statistic: float  # test statistic (e.g. difference of proportions or z)
    p_value: float = Field(ge=0.0, le=1.0)
    n: int = Field(ge=0)  # episodes per batch
    test: str = "fisher_exact"  # which test produced `p_value`
    reason: str = ""  # why this status (e.g. "control at ceiling: no room to show an increase")
    # which failures the rates count: "any" phase (the factor claim) or the diagnosis's "named" phase
    counted: str = "named"
    # the phase most targeted-batch failures ended in, and the share of them in the diagnosed phase
    observed_phase: str | None = None
    phase_share: float | None = Field(default=None, ge=0.0, le=1.0)
    # the diagnosis's context (its other edited factors) was dropped: under it the control batch failed at
    # its ceiling, so the factor was tested alone on the seed distribution (`VerifyConfig.at_ceiling`)
    context_dropped: bool = False


class EpisodeRecord(BaseModel):
    """An episode as memory knows it: where it is on disk and how it went (arrays stay in the .npz)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    episode_id: str
    path: str = ""  # episodes/round_03/<episode>.npz, relative to the run dir
    scene_id: str
    family: str
    success: bool
    failing_phase: str | None = None
    round: int = Field(0, ge=0)
    mode_id: str = "seed"  # the (mode, family) arm whose budget produced the scene


class ProgramEntry(ContentHashed):
    """A generation + training program pair stored for a mode and the family they were written for."""

    mode_id: str
    family: str
    generation_program_id: str
    training_program_id: str
    generation_path: str = ""  # programs/round_03/gen_<mode>_<hash8>.py, relative to the run dir
    training_path: str = ""
    round: int = Field(0, ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """Keyed by what it links (not by paths or round), so re-adding the same pair is a no-op."""
        key = [self.mode_id, self.family, self.generation_program_id, self.training_program_id]
        return "pg_" + digest(key)


class ProgressPoint(BaseModel):
    """One measurement of an arm (mode, family) in one round, with the smoothed learning progress after it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode_id: str
    family: str
    round: int = Field(ge=0)
    success: float = Field(ge=0.0, le=1.0)  # success rate measured after the round's training
    n: int = Field(0, ge=0)  # episodes behind `success`
    before: float | None = Field(None, ge=0.0, le=1.0)  # same arm before the round's training, if measured
    alp: float | None = None  # smoothed |Δ success| after this point (filled on read; None until a Δ exists)


class DifficultyMode(BaseModel):
    """A validated, recurring way the policy fails: one factor in one phase (one side of its range),
    possibly seen in several families. `programs` and `learning_progress` are filled from the procedural
    collection and the ledger when read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str  # `<factor>_<phase>[_<k>]`, a valid file-name fragment
    description: str
    factor_group: FactorGroup
    factor: str
    phase: str
    side: Side | None = None
    values: tuple[str, ...] = ()  # JSON of the choice values seen in member edits (side "values")
    families: tuple[str, ...] = ()  # families where a member diagnosis was validated, first seen first
    evidence_ids: tuple[str, ...] = ()  # episode ids of member diagnoses
    diagnosis_ids: tuple[str, ...] = ()
    created_round: int = 0
    programs: tuple[ProgramEntry, ...] = ()
    learning_progress: tuple[ProgressPoint, ...] = ()

    @property
    def factor_key(self) -> str:
        return f"{self.factor_group}.{self.factor}"
