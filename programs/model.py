"""The two program types the data engine writes (DESIGN §3): a `GenerationProgram` (Python source that
builds `SceneSpec`s from factor values) and a `TrainingProgram` (ordered subgoals whose `done`/`progress`
expressions become a staged potential, see `programs.potential`).

Both are frozen pydantic models. A program's `id` is the SHA-256 of everything it says (its canonical
JSON without the id), lineage included, so every node of a lineage tree has its own id; `fingerprint`
hashes only what changes behaviour, for de-duplication.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from common.hashed import ContentHashed
from common.registry import by_name
from sim.factors import FactorDef, FactorValues
from sim.scene import FACTOR_GROUPS

MODE_PATTERN = r"^[a-z0-9][a-z0-9_]*$"  # mode ids become file names
NAME_PATTERN = r"^[a-z_][a-z0-9_]*$"
ROLE_REF = re.compile(r"^goal\[(\d+)\]\.(fn|args\[(\d+)\])$")  # role bound to a scene's goal predicate


def _digest(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class _Program(ContentHashed):
    """What both program kinds share: family, lineage, provenance, content hash."""

    kind: ClassVar[str]
    behaviour_fields: ClassVar[tuple[str, ...]]

    family: str
    mode_id: str = Field("seed", pattern=MODE_PATTERN)  # difficulty mode this program serves
    parent_id: str | None = None  # id of the program this one was derived from (None for seeds)
    round: int = Field(0, ge=0)  # engine round that wrote it
    diagnosis: str | None = None  # the diagnosis it came from, as text
    # what a repair changed and why (`programs.refine`), beside the diagnosis it keeps
    refinement: str | None = None

    @classmethod
    def id_mismatch(cls, stored: Any, computed: str) -> str:
        """Short ids, and what a mismatch means for a program."""
        return (f"{cls.__name__}: stored id {str(stored)[:12]}… does not match its content "
                f"({computed[:12]}…); the program was changed after it was written")

    # fields added after programs were first stored: left out of the id while they hold their default,
    # so every program written before them keeps its id (and its file name)
    _late_fields: ClassVar[dict[str, Any]] = {"refinement": None}

    def _unset_late(self) -> set[str]:
        return {k for k, default in self._late_fields.items() if getattr(self, k) == default}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """SHA-256 of the program's canonical JSON (lineage included)."""
        return _digest(self.model_dump(mode="json", exclude={"id", *self._unset_late()}))

    @property
    def hash8(self) -> str:
        return self.id[:8]

    @property
    def fingerprint(self) -> str:
        """Hash of the behaviour-defining fields only: equal fingerprints behave identically."""
        return _digest(self.model_dump(mode="json", include=set(self.behaviour_fields) - self._unset_late()))

    @property
    def file_stem(self) -> str:
        """`gen_<mode>_<hash8>` / `train_<mode>_<hash8>`."""
        return f"{self.kind}_{self.mode_id}_{self.hash8}"



class GenerationProgram(_Program):
    """Python `source` defining `generate(rng, **factors) -> SceneSpec`, with its factor schema.

    The caller samples (or takes the defaults of) the factors in `factors` and passes them flat by
    name; the source may import only numpy, math, random and `sim.scene` types.
    """

    kind: ClassVar[str] = "gen"
    behaviour_fields: ClassVar[tuple[str, ...]] = ("family", "source", "factors")

    source: str = Field(min_length=1)
    factors: tuple[FactorDef, ...] = ()

    @field_validator("factors")
    @classmethod
    def _unique(cls, v: tuple[FactorDef, ...]) -> tuple[FactorDef, ...]:
        names = [f.name for f in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate factor names: {dup}")
        return v

    def factor(self, name: str) -> FactorDef:
        return by_name(self.factors, name, "factor")

    def default_factors(self) -> dict[str, Any]:
        """Flat name → default value, as `generate(rng, **factors)` takes them."""
        return {f.name: f.default for f in self.factors}

    def sample_factors(self, rng: np.random.Generator, ood: bool = False) -> dict[str, Any]:
        """Flat name → value drawn from each factor's range (its OOD shell when `ood`)."""
        return {f.name: f.sample(rng, ood) for f in self.factors}

    def grouped(self, flat: dict[str, Any]) -> FactorValues:
        """Flat values → {group: {name: value}} as `SceneSpec.factors` stores them."""
        out: FactorValues = {g: {} for g in FACTOR_GROUPS}
        for f in self.factors:
            if f.name in flat:
                out[f.group][f.name] = flat[f.name]
        return out


class Subgoal(BaseModel):
    """One stage: `done` (a boolean expression) and `progress` (a number in [0, 1) while not done)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    done: str = Field(min_length=1)
    progress: str = "0.0"
    doc: str = ""


class TrainingProgram(_Program):
    """Ordered subgoals over `WorldState`; the last `done` is the task verifier (see DESIGN §4).

    `roles` name the entities the expressions talk about. A role maps to an entity name ("object") or
    to a reference into the scene's goal ("goal[0].args[1]", "goal[0].fn"), resolved per scene when
    the potential is compiled, so one program serves every scene of a family.
    """

    kind: ClassVar[str] = "train"
    behaviour_fields: ClassVar[tuple[str, ...]] = ("family", "subgoals", "roles", "beta", "gamma", "chunk",
                                                   "latched")
    _late_fields: ClassVar[dict[str, Any]] = {"refinement": None, "latched": False}

    subgoals: tuple[Subgoal, ...] = Field(min_length=1)
    # the stage rule: False, k* = how many leading subgoals are done; True ("latched"), k* = the last
    # subgoal whose `done` holds — a later stage implies the earlier ones, e.g. `grasped` no longer has to
    # hold once the object was released on the goal
    latched: bool = False
    roles: dict[str, str] = Field(default_factory=dict)
    beta: float = Field(1.0, ge=0)  # shaping scale β
    gamma: float = Field(0.99, gt=0, le=1)  # discount γ per control step
    chunk: int = Field(10, gt=0)  # action-chunk length h (control steps)

    @model_validator(mode="after")
    def _check(self) -> TrainingProgram:
        names = [g.name for g in self.subgoals]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate subgoal names: {dup}")
        for role in self.roles:
            if not re.match(NAME_PATTERN, role):
                raise ValueError(f"role name {role!r} must be a lower-case identifier")
        return self

    @property
    def m(self) -> int:
        """Number of subgoals (the potential's maximum)."""
        return len(self.subgoals)

    def needs_scene(self) -> bool:
        """Whether some role is bound through the scene's goal."""
        return any(ROLE_REF.match(v) for v in self.roles.values())

    def bind_roles(self, goal: tuple | None = None) -> dict[str, str | float]:
        """Role → constant, reading goal references from `goal` (a scene's goal predicates)."""
        out: dict[str, str | float] = {}
        for role, ref in self.roles.items():
            m = ROLE_REF.match(ref)
            if not m:
                out[role] = ref
                continue
            if goal is None:
                raise ValueError(f"role {role!r} is bound to {ref!r}: compile with the scene")
            i = int(m.group(1))
            if i >= len(goal):
                raise ValueError(f"role {role!r}: {ref!r} but the scene has {len(goal)} goal predicate(s)")
            pred = goal[i]
            if m.group(2) == "fn":
                out[role] = pred.fn
            else:
                j = int(m.group(3))
                if j >= len(pred.args):
                    raise ValueError(f"role {role!r}: {ref!r} but goal {pred} has {len(pred.args)} "
                                     "argument(s)")
                out[role] = pred.args[j]
        return out


Program = GenerationProgram | TrainingProgram


def program_from_dict(data: dict[str, Any]) -> Program:
    """Either kind, told apart by its fields (a sidecar stores `kind` too)."""
    data = dict(data)
    kind = data.pop("kind", None) or ("gen" if "source" in data else "train")
    cls = GenerationProgram if kind == "gen" else TrainingProgram
    return cls.model_validate(data)
