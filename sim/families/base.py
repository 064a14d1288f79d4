"""The task-family plugin contract: a factor space (with its out-of-distribution widening), a scene
builder from factor values, a scripted expert, and phase labelling from predicates.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from sim.experts.primitives import ScriptedExpert
from sim.registry import Registry
from sim.scene import FACTOR_GROUPS, FactorGroup, SceneSpec
from sim.world import WorldState

FactorValues = dict[FactorGroup, dict[str, Any]]

COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.15, 0.12, 1), "green": (0.15, 0.7, 0.2, 1), "blue": (0.15, 0.3, 0.85, 1),
    "yellow": (0.95, 0.85, 0.1, 1), "purple": (0.55, 0.2, 0.7, 1), "orange": (0.95, 0.5, 0.1, 1),
    "white": (0.92, 0.92, 0.92, 1), "black": (0.1, 0.1, 0.1, 1),
}


class FactorDef(BaseModel):
    """One editable scene factor. Floats/ints have `range` (in distribution) and `ood_range` (the wider
    range; OOD samples come from the part of it outside `range`); choices have `choices` and
    `ood_choices` (unseen values)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    group: FactorGroup
    type: Literal["float", "int", "choice"]
    default: Any
    range: tuple[float, float] | None = None
    ood_range: tuple[float, float] | None = None
    choices: tuple[Any, ...] | None = None
    ood_choices: tuple[Any, ...] | None = None
    doc: str = ""

    @model_validator(mode="after")
    def _check(self) -> FactorDef:
        if self.type == "choice":
            if not self.choices:
                raise ValueError(f"factor {self.name!r}: a choice factor needs `choices`")
        elif self.range is None or self.range[0] > self.range[1]:
            raise ValueError(f"factor {self.name!r}: needs a `range` with lo <= hi")
        if self.ood_range is not None and self.range is not None:
            if self.ood_range[0] > self.range[0] or self.ood_range[1] < self.range[1]:
                raise ValueError(f"factor {self.name!r}: ood_range must contain range")
        return self

    @property
    def has_ood(self) -> bool:
        return bool(self.ood_choices) or (self.ood_range is not None and self.ood_range != self.range)

    def sample(self, rng: np.random.Generator, ood: bool = False) -> Any:
        if self.type == "choice":
            pool = self.ood_choices if ood and self.ood_choices else self.choices
            return pool[int(rng.integers(len(pool)))]
        lo, hi = self.range
        if ood and self.has_ood:
            (olo, ohi) = self.ood_range
            left, right = lo - olo, ohi - hi  # the two shells outside the in-distribution range
            u = rng.uniform(0, left + right)
            x = olo + u if u < left else hi + (u - left)
        else:
            x = rng.uniform(lo, hi)
        return int(round(x)) if self.type == "int" else float(x)

    def contains(self, value: Any, ood: bool = False) -> bool:
        if self.type == "choice":
            return value in (self.choices + (self.ood_choices or ()) if ood else self.choices)
        lo, hi = self.ood_range if ood and self.ood_range else self.range
        return lo - 1e-9 <= value <= hi + 1e-9


class TaskFamily(ABC):
    """A registered task family. Subclasses set `name`, `factors`, `phases` and implement the rest."""

    name: ClassVar[str]
    factors: ClassVar[tuple[FactorDef, ...]]
    phases: ClassVar[tuple[str, ...]]  # canonical order; the last one is "done"
    seed_count: ClassVar[int] = 5

    # ---- factors ----------------------------------------------------------------------------------
    @classmethod
    def factor(cls, name: str) -> FactorDef:
        for f in cls.factors:
            if f.name == name:
                return f
        raise KeyError(f"{cls.name}: no factor {name!r}; factors: {[f.name for f in cls.factors]}")

    @classmethod
    def default_factors(cls) -> FactorValues:
        out: FactorValues = {g: {} for g in FACTOR_GROUPS}
        for f in cls.factors:
            out[f.group][f.name] = f.default
        return out

    @classmethod
    def sample_factors(cls, rng: np.random.Generator, ood: bool = False) -> FactorValues:
        out: FactorValues = {g: {} for g in FACTOR_GROUPS}
        for f in cls.factors:
            out[f.group][f.name] = f.sample(rng, ood)
        return out

    @classmethod
    def flat(cls, factors: FactorValues) -> dict[str, Any]:
        """Group-free view with defaults filled in; unknown names are an error."""
        known = {f.name for f in cls.factors}
        vals = {f.name: f.default for f in cls.factors}
        for group, d in factors.items():
            for k, v in d.items():
                if k not in known:
                    raise KeyError(f"{cls.name}: unknown factor {k!r} in group {group!r}; known: {sorted(known)}")
                vals[k] = v
        return vals

    # ---- scenes ------------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def make_scene(cls, factors: FactorValues, seed: int = 0) -> SceneSpec:
        """Deterministic: the same factors and seed give the same scene."""

    @classmethod
    def sample_scene(cls, seed: int, ood: bool = False) -> SceneSpec:
        rng = np.random.default_rng([seed, int(ood), 7])
        return cls.make_scene(cls.sample_factors(rng, ood), seed)

    @classmethod
    def seed_scenes(cls) -> list[SceneSpec]:
        """The fixed in-distribution scenes every run starts from."""
        return [cls.sample_scene(1000 + i) for i in range(cls.seed_count)]

    # ---- behaviour ---------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def expert(cls, spec: SceneSpec) -> ScriptedExpert:
        """A fresh scripted expert for one episode in `spec`."""

    @classmethod
    @abstractmethod
    def phase(cls, spec: SceneSpec, s: WorldState) -> str:
        """The phase label of one state, from predicates only."""

    @classmethod
    def label(cls, spec: SceneSpec, states: list[WorldState]) -> tuple[list[str], str | None]:
        """Phase per state, and the failing phase: None on success, else the furthest phase reached
        in the canonical order (where the attempt got stuck)."""
        labels = [cls.phase(spec, s) for s in states]
        if labels and labels[-1] == "done":
            return labels, None
        furthest = max((cls.phases.index(p) for p in labels), default=0)
        return labels, cls.phases[min(furthest, len(cls.phases) - 2)]


FAMILIES: Registry[type[TaskFamily]] = Registry("task family")


def get_family(name: str) -> type[TaskFamily]:
    import sim.families  # noqa: F401  (registers the built-in families)

    return FAMILIES.get(name)
