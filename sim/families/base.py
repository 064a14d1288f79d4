"""The task-family plugin contract: a factor space (with its out-of-distribution widening), a scene
builder from factor values, a scripted expert, and phase labelling from predicates.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from sim.experts.primitives import ScriptedExpert
from sim.factors import COLORS, FactorDef, FactorValues  # noqa: F401  (families import them from here)
from sim.registry import Registry
from sim.scene import FACTOR_GROUPS, SceneSpec
from sim.world import WorldState


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
                    raise KeyError(
                        f"{cls.name}: unknown factor {k!r} in group {group!r}; known: {sorted(known)}"
                    )
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
