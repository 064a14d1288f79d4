"""`SceneSpec`: the backend-agnostic description of one manipulation scene (pydantic, JSON round trip).

Coordinates are in the table frame: the origin is the centre of the table top, x points away from the
robot, y to the robot's left, z up. The robot base sits at `ROBOT_BASE` on the table's near edge.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_serializer,
    model_validator,
)

from common.registry import by_name

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
    # every number finite: NaN or infinite poses, sizes and masses are refused wherever a scene comes from
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# Bounds on what one scene may say (scenes also come from untrusted generation programs): lengths and
# characters of every text, physically sensible magnitudes, and counts.
_NAME = r"^[a-z][a-z0-9_]{0,63}$"
_TEXT = r"^[^\x00-\x1f\x7f]*$"  # no control characters (NUL, newlines, escapes)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_WORD = 64  # characters of a goal argument, a factor name or string value, a fixture joint or parameter


def _one_line(text: str) -> str:
    if _CONTROL.search(text):
        raise ValueError(f"{text[:MAX_WORD]!r} holds a control character (a line break, tab or escape)")
    return text


# a short line of text: what a scene names besides its objects (goal arguments such as "cabinet/drawer0",
# factor names and values, fixture joints and parameters; the longest in the committed scenes has 16)
Word = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WORD), AfterValidator(_one_line)]


def _short_keys(value: Any) -> Any:
    """Refuse a long key before pydantic does: pydantic names a bad key in the error's location, whole."""
    if isinstance(value, dict):
        for k in value:
            if isinstance(k, str) and len(k) > MAX_WORD:
                raise ValueError(f"a key of {len(k)} characters; keys are at most {MAX_WORD}")
    return value


# mappings keyed by `Word`s
WordKeyed = Annotated[dict[Word, Any], BeforeValidator(_short_keys)]
WordFloats = Annotated[dict[Word, float], BeforeValidator(_short_keys)]


class ObjectSpec(_Model):
    """A free (movable) object.

    `size` is kind-specific: box → half extents (x, y, z); cylinder → (radius, half height, unused);
    sphere → (radius, unused, unused); mesh → the uniform scale of a LIBERO asset in size[0].
    """

    name: str = Field(pattern=_NAME)
    kind: ObjectKind
    # what a person would call it ("cube", "bowl", ...); used in instructions
    category: str = Field(min_length=1, max_length=64, pattern=_TEXT)
    asset: str | None = Field(None, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")  # LIBERO asset (mesh)
    size: tuple[float, float, float]
    rgba: tuple[float, float, float, float] = (0.8, 0.2, 0.2, 1.0)
    mass: float = Field(0.1, gt=0, le=1000.0)
    friction: float = Field(1.0, gt=0, le=100.0)
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
        if min(self.size) < 0 or self.size[0] <= 0 or max(self.size) > 5.0:
            raise ValueError(f"object {self.name!r}: size {self.size} must be positive and at most 5")
        _bounded(f"object {self.name!r}", pos=self.pos, z=self.z, yaw=self.yaw, region=self.region,
                 rgba=self.rgba)
        return self


class FixtureSpec(_Model):
    """A fixture welded to the table: articulated cabinet/door, open bin, or a block with a hole.

    `params` holds kind-specific dimensions (see `sim.fixtures`); `init` holds initial joint values as
    fractions of their range, e.g. {"drawer0": 0.6} for a drawer 60 % open.
    """

    name: str = Field(pattern=_NAME)
    kind: FixtureKind
    pos: tuple[float, float]
    yaw: float = 0.0
    rgba: tuple[float, float, float, float] = (0.55, 0.4, 0.3, 1.0)
    params: WordFloats = Field(default_factory=dict, max_length=32)
    init: WordFloats = Field(default_factory=dict, max_length=32)

    @field_validator("init")
    @classmethod
    def _fractions(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            if not 0.0 <= x <= 1.0:
                raise ValueError(f"init[{k!r}] = {x} must be a fraction in [0, 1]")
        return v

    @model_validator(mode="after")
    def _check(self) -> FixtureSpec:
        _bounded(f"fixture {self.name!r}", pos=self.pos, yaw=self.yaw, rgba=self.rgba)
        for k, x in self.params.items():
            if not abs(x) <= 10.0:
                raise ValueError(f"fixture {self.name!r}: params[{k!r}] = {x} must lie in [-10, 10]")
        return self


def _check_words(value: Any, where: str) -> None:
    """Every string inside a factor value (nested in lists and mappings, keys too) is a `Word`: at most
    `MAX_WORD` characters, no control character. Its message names where, never repeats the text."""
    if isinstance(value, str):
        if len(value) > MAX_WORD or _CONTROL.search(value):
            raise ValueError(f"{where}: a text of {len(value)} characters; factor texts are at most "
                             f"{MAX_WORD} characters with no control characters (line breaks, escapes)")
    elif isinstance(value, list | tuple):
        for i, x in enumerate(value):
            _check_words(x, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, x in value.items():
            _check_words(k, f"{where} (a key)")
            _check_words(x, f"{where}.{str(k)[:MAX_WORD]}")


def _bounded(what: str, *, pos: Any = None, z: Any = None, yaw: Any = None, region: Any = None,
             rgba: Any = None) -> None:
    """Positions within 5 m of the table centre, yaw within ±100 rad, colours in [0, 1]."""
    coords = [*(pos or ()), *(region or ()), *(() if z is None else (z,))]
    if any(not -5.0 <= c <= 5.0 for c in coords):
        raise ValueError(f"{what}: positions must lie within 5 m of the table centre, got {coords}")
    if yaw is not None and not -100.0 <= yaw <= 100.0:
        raise ValueError(f"{what}: yaw {yaw} is outside [-100, 100] rad")
    if rgba is not None and any(not 0.0 <= c <= 1.0 for c in rgba):
        raise ValueError(f"{what}: rgba {rgba} must lie in [0, 1]")


class Predicate(_Model):
    """A goal predicate call, e.g. on(cube, plate) → Predicate(fn="on", args=("cube", "plate"))."""

    fn: Word
    # an entity name or a number; a number is never read from text ("1e5\n" stays a refused string)
    args: tuple[Word | Annotated[float, Field(strict=True)], ...] = Field(max_length=8)

    @field_validator("fn")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in PREDICATE_NAMES:
            raise ValueError(f"unknown predicate {v!r}; known: {', '.join(PREDICATE_NAMES)}")
        return v

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(map(str, self.args))})"


_Shift = Annotated[float, Field(ge=-0.3, le=0.3)]  # m, a LIBERO start region's move on its support


class LiberoRef(_Model):
    """A scene in LIBERO's world instead of ours: one task of a LIBERO suite (its BDDL file in the installed
    package), edited. `swap` names an object whose starting region the mover takes (and that object takes
    the mover's: LIBERO-Pro's position change); `move` shifts the region the mover then starts in by
    (dx, dy) m on its support. The mover is the task's object of interest (the goal's first argument)
    unless `mover` names another object (LIBERO-Pro moves `libero_spatial`'s plate, the goal's target, not
    the bowl). The scene's `instruction` is the one given to the policy (the BDDL's own words, or other
    words). `sim.libero.world` builds and runs it."""

    suite: str = Field(pattern=r"^libero_[a-z0-9_]{1,40}$")
    task: str = Field(pattern=r"^[a-z][a-z0-9_]{0,159}$")
    swap: str | None = Field(None, pattern=_NAME)
    move: tuple[_Shift, _Shift] | None = None
    mover: str | None = Field(None, pattern=_NAME)

    @model_serializer(mode="wrap")
    def _without_default_mover(self, handler: Any) -> Any:
        """Written only when set: a scene that moves the object of interest keeps the id (a hash of its
        JSON) it had before `mover` existed, so earlier runs' scenes and verdicts still match."""
        out = handler(self)
        if isinstance(out, dict) and out.get("mover") is None:
            out.pop("mover", None)
        return out


_Offset = Annotated[float, Field(ge=-0.3, le=0.3)]  # m, a move of the arm's start or of the table top


class Conditions(_Model):
    """What a scene says beyond its objects and fixtures (the extended factor space, `sim.extension`): the
    table, the arm's start, the objects' damping, and the noise on what the arm does and the policy reads.
    The defaults change nothing; `sim.builder` applies the first ones, `sim.env` the action noise, and
    `sim.mujoco_episode` the observation noise and delay (to a policy's observations, never the expert's)."""

    # m the table top stands above its usual height relative to the arm's base (the arm stands lower)
    table_height: _Offset = 0.0
    # sliding friction of the table top
    table_friction: float = Field(1.0, gt=0, le=5.0)
    # the table top's colour; None: the usual wood
    table_rgba: tuple[float, float, float, float] | None = None
    # m the gripper's start is moved from its usual pose (x, y, z; it still points straight down)
    ee_offset: tuple[_Offset, _Offset, _Offset] = (0.0, 0.0, 0.0)
    # the fingers' opening at the start, a fraction of fully open (held until an action sets it)
    gripper: float = Field(1.0, ge=0.0, le=1.0)
    # damping of every object's free joint (N·s/m, N·m·s/rad)
    damping: float = Field(0.0, ge=0.0, le=10.0)
    # std of Gaussian noise added to each normalised Δposition/Δrotation action component
    action_noise: float = Field(0.0, ge=0.0, le=1.0)
    # gain on the Δposition/Δrotation actions (1: as commanded)
    action_gain: float = Field(1.0, ge=0.1, le=3.0)
    # m, std of Gaussian noise on the object, region and handle positions a policy reads
    obs_noise: float = Field(0.0, ge=0.0, le=0.1)
    # control steps by which the state a policy reads lags the world
    obs_delay: int = Field(0, ge=0, le=20)

    @model_validator(mode="after")
    def _check(self) -> Conditions:
        _bounded("conditions", rgba=self.table_rgba)
        return self


class SceneSpec(_Model):
    """One scene: family, instruction, objects, fixtures, goal, the factor values that produced it, seed.
    With `libero` set, the scene is that LIBERO task (its objects and fixtures are LIBERO's, `objects` and
    `fixtures` stay empty, `goal` restates the task's goal in our predicates). `conditions` (None: the
    usual table, start, dynamics and observations) is written only when set, so a scene without it keeps
    the JSON and the id it had before the field existed."""

    family: str = Field(pattern=_NAME)
    instruction: str = Field(min_length=1, max_length=500, pattern=_TEXT)
    objects: tuple[ObjectSpec, ...] = Field(max_length=64)
    fixtures: tuple[FixtureSpec, ...] = Field((), max_length=16)
    goal: tuple[Predicate, ...] = Field(max_length=32)
    # factor name → value (a number, a bool, a `Word`, None, or lists and mappings of them)
    factors: dict[FactorGroup, WordKeyed] = Field(default_factory=dict)
    seed: int = Field(0, ge=-(2**63), lt=2**63)
    max_steps: int = Field(300, gt=0, le=100_000)  # control steps (20 Hz) the episode may take
    libero: LiberoRef | None = None
    conditions: Conditions | None = None

    @model_serializer(mode="wrap")
    def _without_default_conditions(self, handler: Any) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("conditions") is None:
            out.pop("conditions", None)
        return out

    @model_validator(mode="after")
    def _names(self) -> SceneSpec:
        names = [o.name for o in self.objects] + [f.name for f in self.fixtures]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate names in scene: {sorted(dup)}")
        if not self.goal:
            raise ValueError("a scene needs at least one goal predicate")
        if self.libero is not None and (self.objects or self.fixtures):
            raise ValueError("a LIBERO scene (`libero` set) takes its objects and fixtures from LIBERO's "
                             "task; leave `objects` and `fixtures` empty")
        if self.libero is not None and self.conditions is not None:
            raise ValueError("a LIBERO scene (`libero` set) runs in LIBERO's world, which takes no "
                             "`conditions`")
        for group, values in self.factors.items():
            for name, value in values.items():
                _check_words(value, f"factors.{group}.{name}")
            if len(values) > 64 or len(json.dumps(values, allow_nan=False, default=str)) > 10_000:
                raise ValueError(f"factors[{group!r}] is too large (at most 64 factors, 10 kB of JSON)")
        return self

    def object_kind(self, name: str) -> str:
        """An object's kind; a LIBERO scene's objects are LIBERO's meshes (not listed in `objects`)."""
        return "mesh" if self.libero is not None else self.object(name).kind

    def entity_names(self) -> set[str]:
        """The objects and fixtures a program may name: ours, or in a LIBERO scene those its goal names
        (LIBERO's BDDL holds the rest)."""
        names = {o.name for o in self.objects} | {f.name for f in self.fixtures}
        if self.libero is not None:
            names |= {a for p in self.goal for a in p.args if isinstance(a, str)}
        return names

    def object(self, name: str) -> ObjectSpec:
        return by_name(self.objects, name, "object", where=" in scene")

    def fixture(self, name: str) -> FixtureSpec:
        return by_name(self.fixtures, name, "fixture", where=" in scene")

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

