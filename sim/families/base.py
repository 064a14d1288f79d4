"""The task-family plugin contract. A family is a folder `sim/families/<family>/`:

    scene.py    the factor schema (`FACTORS`, each factor with its facts) and `generate(rng, **factors)`,
                written once in the sandbox-clean subset: it is the family's scene builder *and* its seed
                generation program (the sandbox runs the same text)
    train.toml  the seed training program (data: the program's fields, read by `programs.seeds`)
    family.py   the `TaskFamily` subclass: phases (`phase_table`, from the vocabulary in `phases.py`), the
                scripted expert, phase labelling, registration
    __init__.py imports family.py (which registers it)

`sim/families/__init__.py` imports every folder; `tests/sim/test_families.py` builds, validates, solves,
sandboxes and compiles every registered family.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from common.registry import Registry, by_name
from sim.experts.primitives import ScriptedExpert
from sim.extension import EXTENSION, EXTENSION_NAMES, Space, extend
from sim.factors import COLORS, FactorDef, FactorValues  # noqa: F401  (families import them from here)
from sim.families.phases import DONE, Phase
from sim.scene import FACTOR_GROUPS, SceneSpec
from sim.world import WorldState


def factor_schema(literal: Sequence[Mapping[str, Any]]) -> tuple[FactorDef, ...]:
    """The `FactorDef`s of a scene builder's `FACTORS` literal."""
    return tuple(FactorDef(**d) for d in literal)


class TaskFamily(ABC):
    """A registered task family. Subclasses name themselves in the class line (`name=`, which registers
    them), set `builder` (their scene.py module) and `phase_table`, and implement `expert` and `phase`;
    `factors` is read from the builder's `FACTORS`."""

    name: ClassVar[str]
    builder: ClassVar[ModuleType]  # the folder's scene.py: FACTORS and generate(rng, **factors)
    factors: ClassVar[tuple[FactorDef, ...]]  # read from the builder's `FACTORS` literal (`factor_schema`)
    # the extended space's factors beyond `factors` (`sim.extension.EXTENSION`; none in a world not ours)
    extension: ClassVar[tuple[FactorDef, ...]] = ()
    # every phase but "done", in canonical order, with what the agents read about it (`phases.Phase`: the
    # critic's relevance of each factor kind, the seed training stages that cover it, the writer's emphasis)
    phase_table: ClassVar[tuple[Phase, ...]]
    # read from `phase_table`: the labels in canonical order, the last one "done"
    phases: ClassVar[tuple[str, ...]]
    # read from `phase_table`: phase → names of the seed training program's stages that cover it (first
    # found wins; None: the verifier); the rules training writer stages a diagnosed phase more finely there
    phase_stages: ClassVar[Mapping[str, tuple[str, ...] | None]] = {}
    seed_count: ClassVar[int] = 5
    # whose world the scenes are: "mujoco" (ours, built by `sim.builder`) or "libero" (LIBERO's, run through
    # `sim.libero`); tools that build our world (`make world`, the simulator benchmarks) take ours by default
    world: ClassVar[str] = "mujoco"

    def __init_subclass__(cls, name: str | None = None, **kwargs: Any) -> None:
        """`class PickPlace(TaskFamily, name="pick_place")` names the family and registers it in `FAMILIES`
        (a subclass without `name=` is a base for others, as `LiberoPickPlaceFamily` is)."""
        super().__init_subclass__(**kwargs)
        if name is not None:
            cls.name = name
            FAMILIES.register(name, cls)
        if "builder" in cls.__dict__ and "factors" not in cls.__dict__:
            cls.factors = factor_schema(cls.builder.FACTORS)
        if "builder" in cls.__dict__ and cls.world == "mujoco":
            cls.extension = factor_schema(EXTENSION)
        if "phase_table" not in cls.__dict__:
            return
        names = [p.name for p in cls.phase_table]
        if len(set(names)) != len(names) or DONE.name in names:
            raise TypeError(f"{cls.__name__}.phase_table: phase names must be unique and not "
                            f"{DONE.name!r} (it comes last by itself), got {names}")
        cls.phases = (*names, DONE.name)
        cls.phase_stages = {p.name: p.stages for p in cls.phase_table}

    @classmethod
    def phase_def(cls, name: str) -> Phase:
        """What the agents read about phase `name`; KeyError for a phase the family does not have."""
        for p in (*cls.phase_table, DONE):
            if p.name == name:
                return p
        raise KeyError(f"{cls.name}: no phase {name!r}; phases: {list(cls.phases)}")

    # ---- the folder ---------------------------------------------------------------------------------
    @classmethod
    def folder(cls) -> Path:
        """The family's folder (`sim/families/<family>/`)."""
        return Path(inspect.getfile(cls)).parent

    @classmethod
    def seed_paths(cls) -> tuple[Path, Path]:
        """(seed generation program = scene builder, seed training program) files."""
        return Path(inspect.getfile(cls.builder)), cls.folder() / "train.toml"

    # ---- factors ----------------------------------------------------------------------------------
    @classmethod
    def schema(cls, space: Space = "core") -> tuple[FactorDef, ...]:
        """The factors of a space: the family's own (`core`), or those and `extension` (`extended`)."""
        return cls.factors if space == "core" else (*cls.factors, *cls.extension)

    @classmethod
    def space_of(cls, factors: FactorValues) -> Space:
        """`extended` when `factors` name an extended factor of this family, else `core`."""
        names = {k for d in factors.values() for k in d}
        return "extended" if names & {f.name for f in cls.extension} else "core"

    @classmethod
    def factor(cls, name: str) -> FactorDef:
        return by_name(cls.schema("extended"), name, "factor", prefix=f"{cls.name}: ")

    @classmethod
    def default_factors(cls, space: Space = "core") -> FactorValues:
        out: FactorValues = {g: {} for g in FACTOR_GROUPS}
        for f in cls.schema(space):
            out[f.group][f.name] = f.default
        return out

    @classmethod
    def sample_factors(cls, rng: np.random.Generator, ood: bool = False,
                       space: Space = "core") -> FactorValues:
        """Every factor of `space` drawn in distribution, or each from its OOD shell with `ood` (the core
        factors draw the same values in either space: the extended ones are drawn after them)."""
        out: FactorValues = {g: {} for g in FACTOR_GROUPS}
        for f in cls.schema(space):
            out[f.group][f.name] = f.sample(rng, ood)
        return out

    @classmethod
    def flat(cls, factors: FactorValues) -> dict[str, Any]:
        """Group-free view with the defaults of the space `factors` belong to filled in (`space_of`);
        unknown names are an error (values as given: a scene's stamped factors are read back with this;
        `check_factors` judges values)."""
        known = {f.name for f in cls.schema("extended")}
        vals = {f.name: f.default for f in cls.schema(cls.space_of(factors))}
        for group, d in factors.items():
            for k, v in d.items():
                if k not in known:
                    raise KeyError(
                        f"{cls.name}: unknown factor {k!r} in group {group!r}; known: {sorted(known)}"
                    )
                vals[k] = v
        return vals

    @classmethod
    def check_factors(cls, factors: FactorValues) -> None:
        """ValueError listing every problem of `factors` as scene-builder input: a known factor under
        another group, a choice that is not one of its values, a number that is not a finite real (unknown
        names: KeyError, from `flat`). Numbers outside the OOD range pass: validity judges the scene."""
        cls.flat(factors)
        known = {f.name: f for f in cls.schema("extended")}
        problems = []
        for group, d in factors.items():
            for k, v in d.items():
                f = known[k]
                if group != f.group:
                    problems.append(f"{k} belongs to group {f.group!r}, not {group!r}")
                elif (why := f.problem(v)) is not None:
                    problems.append(why)
        if problems:
            raise ValueError(f"{cls.name}: bad factor values: " + "; ".join(problems))

    # ---- scenes ------------------------------------------------------------------------------------
    @classmethod
    def make_scene(cls, factors: FactorValues, seed: int = 0) -> SceneSpec:
        """Deterministic: the same factors and seed give the same scene. The scene builder's own
        `generate` (trusted, hand-written text; LLM-written programs run only in the sandbox), stamped
        with the seed and the factor values as given. Factors of the extended space build the core scene and
        apply them (`sim.extension.extend`), as the family's extended seed program does in the sandbox."""
        cls.check_factors(factors)
        rng, values = np.random.default_rng(seed), cls.flat(factors)
        if EXTENSION_NAMES & set(values):
            schema = (*cls.builder.FACTORS, *EXTENSION)
            spec = extend(cls.builder.generate, schema, rng, values)
        else:
            spec = cls.builder.generate(rng, **values)
        return SceneSpec.model_validate({**dict(spec), "seed": seed, "factors": factors})

    @classmethod
    def sample_scene(cls, seed: int, ood: bool = False, space: Space = "core") -> SceneSpec:
        rng = np.random.default_rng([seed, int(ood), 7])
        return cls.make_scene(cls.sample_factors(rng, ood, space), seed)

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
        return labels, cls.stuck_phase(labels)

    @classmethod
    def stuck_phase(cls, labels: list[str]) -> str:
        """The furthest phase `labels` reach in the canonical order, short of "done"."""
        furthest = max((cls.phases.index(p) for p in labels), default=0)
        return cls.phases[min(furthest, len(cls.phases) - 2)]


FAMILIES: Registry[type[TaskFamily]] = Registry("task family")
