"""`SceneSpec`: the backend-agnostic description of one manipulation scene (pydantic, JSON round trip).

Coordinates are in the table frame: the origin is the centre of the table top, x points away from the
robot, y to the robot's left, z up. The robot base sits at `ROBOT_BASE` on the table's near edge.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FactorGroup = Literal["task", "spatial", "attribute"]
FACTOR_GROUPS: tuple[FactorGroup, ...] = ("task", "spatial", "attribute")

ObjectKind = Literal["box", "cylinder", "sphere", "mesh"]
FixtureKind = Literal["cabinet", "door", "bin", "hole_block"]

PREDICATE_NAMES = (
    "on",
    "inside",
    "open_frac",
    "closed",
    "opened",
    "stacked",
    "inserted",
    "grasped",
    "lifted",
    "dist",
    "in_contact",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObjectSpec(_Model):
    """A free (movable) object.

    `size` is kind-specific: box → half extents (x, y, z); cylinder → (radius, half height, unused);
    sphere → (radius, unused, unused); mesh → the uniform scale of a LIBERO asset in size[0].
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: ObjectKind
    category: str  # what a person would call it ("cube", "bowl", ...); used in instructions
    asset: str | None = None  # LIBERO asset name for kind == "mesh"
    size: tuple[float, float, float]
    rgba: tuple[float, float, float, float] = (0.8, 0.2, 0.2, 1.0)
    mass: float = Field(0.1, gt=0)
    friction: float = Field(1.0, gt=0)
    pos: tuple[float, float] | None = None  # (x, y) on the table; None → sampled from `region`
    z: float | None = None  # height of the object's origin; None → resting on the table
    yaw: float = 0.0
    region: tuple[float, float, float, float] | None = None  # (xmin, xmax, ymin, ymax) for placement

    @model_validator(mode="after")
    def _check(self) -> ObjectSpec:
        if self.pos is None and self.region is None:
            raise ValueError(f"object {self.name!r} needs either `pos` or a placement `region`")
        if self.kind == "mesh" and not self.asset:
            raise ValueError(f"mesh object {self.name!r} needs an `asset`")
        if self.region is not None:
            x0, x1, y0, y1 = self.region
            if x0 > x1 or y0 > y1:
                raise ValueError(f"object {self.name!r}: region {self.region} has min > max")
        if min(self.size) < 0 or self.size[0] <= 0:
            raise ValueError(f"object {self.name!r}: size {self.size} must be positive")
        return self


class FixtureSpec(_Model):
    """A fixture welded to the table: articulated cabinet/door, open bin, or a block with a hole.

    `params` holds kind-specific dimensions (see `sim.fixtures`); `init` holds initial joint values as
    fractions of their range, e.g. {"drawer0": 0.6} for a drawer 60 % open.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: FixtureKind
    pos: tuple[float, float]
    yaw: float = 0.0
    rgba: tuple[float, float, float, float] = (0.55, 0.4, 0.3, 1.0)
    params: dict[str, float] = Field(default_factory=dict)
    init: dict[str, float] = Field(default_factory=dict)

    @field_validator("init")
    @classmethod
    def _fractions(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            if not 0.0 <= x <= 1.0:
                raise ValueError(f"init[{k!r}] = {x} must be a fraction in [0, 1]")
        return v


class Predicate(_Model):
    """A goal predicate call, e.g. on(cube, plate) → Predicate(fn="on", args=("cube", "plate"))."""

    fn: str
    args: tuple[str | float, ...]

    @field_validator("fn")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in PREDICATE_NAMES:
            raise ValueError(f"unknown predicate {v!r}; known: {', '.join(PREDICATE_NAMES)}")
        return v

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(map(str, self.args))})"


class SceneSpec(_Model):
    """One scene: family, instruction, objects, fixtures, goal, the factor values that produced it, seed."""

    family: str
    instruction: str
    objects: tuple[ObjectSpec, ...]
    fixtures: tuple[FixtureSpec, ...] = ()
    goal: tuple[Predicate, ...]
    factors: dict[FactorGroup, dict[str, Any]] = Field(default_factory=dict)
    seed: int = 0
    max_steps: int = Field(300, gt=0)  # control steps (20 Hz) the episode may take

    @model_validator(mode="after")
    def _names(self) -> SceneSpec:
        names = [o.name for o in self.objects] + [f.name for f in self.fixtures]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate names in scene: {sorted(dup)}")
        if not self.goal:
            raise ValueError("a scene needs at least one goal predicate")
        return self

    def object(self, name: str) -> ObjectSpec:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"no object {name!r} in scene; objects: {[o.name for o in self.objects]}")

    def fixture(self, name: str) -> FixtureSpec:
        for f in self.fixtures:
            if f.name == name:
                return f
        raise KeyError(f"no fixture {name!r} in scene; fixtures: {[f.name for f in self.fixtures]}")

    @property
    def scene_id(self) -> str:
        """A short content hash: equal specs have equal ids."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str) -> SceneSpec:
        return cls.model_validate_json(text)


# ---- helpers for scene builders (the sandbox lets generation programs import these) ----------------------
def factor_values(schema: tuple[dict[str, Any], ...], factors: dict[str, Any]) -> dict[str, Any]:
    """Every factor's value: the schema's defaults, overridden by `factors` (unknown names are an error)."""
    values = {f["name"]: f["default"] for f in schema}
    unknown = sorted(set(factors) - set(values))
    if unknown:
        raise ValueError(f"unknown factors {unknown}; known: {sorted(values)}")
    values.update(factors)
    return values


def grouped(schema: tuple[dict[str, Any], ...], values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`values` by factor group, as `SceneSpec.factors` holds them."""
    out: dict[str, dict[str, Any]] = {g: {} for g in FACTOR_GROUPS}
    for f in schema:
        out[f["group"]][f["name"]] = values[f["name"]]
    return out


def fill(template: str, **words: str) -> str:
    """`template` with each {name} replaced by its word (the sandbox does not offer `str.format`)."""
    for name, word in words.items():
        template = template.replace("{" + name + "}", word)
    return template

