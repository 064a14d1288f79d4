"""The failing scene's factors as the critic reads them: each value placed in the family's
in-distribution range (`FactorReading.position`), whether it matters in this scene at all (`live`: a peg's
size does not matter when the task is stacking), and which task choices it matters under (`context`: the
peg's size only with `task = "insert"`), found by rebuilding the scene with the family's `make_scene`
(pure Python, no simulator) with one factor changed at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from programs.factor_space import family_factors
from sim.factors import FactorDef
from sim.families import get_family
from sim.scene import SceneSpec

LANGUAGE = ("template", "paraphrase")  # task-group factors that only reword the instruction
# How a family's `make_scene` refuses factor values it was not written for, which a written program's scene
# may hold (probed on every family): an invalid size, mass or friction fails the scene model's validation
# (pydantic's ValidationError, a ValueError), an unknown choice misses its lookup table (KeyError), a value
# of the wrong type (a string or None for a number) fails arithmetic (TypeError). Anything else is a bug.
REFUSED = (ValueError, KeyError, TypeError)


class FactorReading(BaseModel):
    """One factor of the failing scene, placed in the family's in-distribution (ID) range.

    `position` is −1 at the low end of the ID range, 0 at its centre, +1 at the high end (|p| > 1 outside
    it); choices get 0 for a seen value and 1.5 for an unseen (OOD) one."""

    model_config = ConfigDict(frozen=True)

    name: str
    group: str
    type: str
    value: Any
    id_range: str  # "[lo, hi]" or "{a, b}" as a person reads it
    lo: float | None = None  # the ID range of a number factor
    hi: float | None = None
    position: float
    note: str = ""  # "at the high edge", "outside the ID range (low)", "unseen choice", ...
    live: bool = True  # False when changing it does not change this scene (a peg size in a stacking task)

    @property
    def atypicality(self) -> float:
        """|position|: 0 typical, 1 at an edge of the ID range, more outside it."""
        return abs(self.position)




def read_factor(f: FactorDef, value: Any) -> FactorReading:
    """Place `value` in `f`'s in-distribution range. Choices (and the integer indices of the task group,
    e.g. an instruction template) are categories: every seen value is typical, an unseen one is not."""
    if f.type == "choice" or (f.type == "int" and f.group == "task"):
        seen = f.choices or () if f.type == "choice" else None
        known = value in seen if seen is not None else f.contains(value)
        lo, hi = f.range or (value, value)
        rng = "{" + ", ".join(map(str, seen)) + "}" if seen is not None else f"{{{lo:g}..{hi:g}}}"
        pos, note = (0.0, "") if known else (1.5, "unseen value (out of distribution)")
        return FactorReading(name=f.name, group=f.group, type=f.type, value=value, id_range=rng,
                             position=pos, note=note)
    lo, hi = f.range or (value, value)
    pos = f.position(value)
    side = "high" if pos > 0 else "low"
    note = (f"outside the ID range ({side})" if abs(pos) > 1.0 + 1e-6
            else f"at the {side} edge of its range" if abs(pos) >= 0.75 else "")
    return FactorReading(name=f.name, group=f.group, type=f.type, value=value, id_range=f"[{lo:g}, {hi:g}]",
                         lo=float(lo), hi=float(hi), position=round(pos, 3), note=note)


def _other(f: FactorDef, value: Any) -> Any:
    """A different value of `f` (for probing whether it matters)."""
    if f.type == "choice":
        return next((c for c in (*(f.choices or ()), *(f.ood_choices or ())) if c != value), value)
    lo, hi = f.ood_range or f.range or (value, value)
    step = max(0.25 * (hi - lo), 1.0 if f.type == "int" else 1e-3)
    alt = value + step if value + step <= hi else value - step
    return int(round(alt)) if f.type == "int" else float(alt)


class Probe:
    """Rebuilds a scene of a registered family with changed factor values and compares the results."""

    def __init__(self, scene: SceneSpec) -> None:
        self.fam = get_family(scene.family)
        self.flat = self.fam.flat(scene.factors)
        self.schema = self.fam.schema(self.fam.space_of(scene.factors))  # the scene's factor space
        self.seed = scene.seed
        self._cache: dict[str, str] = {}

    def built(self, values: dict[str, Any]) -> str:
        """The scene built from flat `values`, as JSON without its factors and seed (cached)."""
        key = repr(sorted(values.items()))
        if key not in self._cache:
            grouped: dict[str, dict[str, Any]] = {f.group: {} for f in self.schema}
            for f in self.schema:
                grouped[f.group][f.name] = values[f.name]
            scene = self.fam.make_scene(grouped, self.seed)  # type: ignore[arg-type]
            self._cache[key] = scene.model_dump_json(exclude={"factors", "seed"})
        return self._cache[key]

    def matters(self, name: str, base: dict[str, Any] | None = None) -> bool:
        """Whether changing `name` (from `base`, default the scene's values) changes the scene."""
        values = base or self.flat
        f = self.fam.factor(name)
        try:
            return self.built({**values, name: _other(f, values[name])}) != self.built(values)
        except REFUSED:  # values the family's code was not written for: assume the factor matters
            return True

    def context(self, name: str) -> dict[str, Any]:
        """Task choices to keep at the scene's values for `name` to keep mattering (e.g. task = insert)."""
        out = {}
        for t in self.schema:
            if t.group != "task" or t.type != "choice" or t.name in (name, *LANGUAGE):
                continue
            for alt in (c for c in t.choices or () if c != self.flat[t.name]):
                if not self.matters(name, {**self.flat, t.name: alt}):
                    out[t.name] = self.flat[t.name]
                    break
        return out


def read_factors(scene: SceneSpec, schema: Sequence[FactorDef]) -> tuple[FactorReading, ...]:
    """Readings of the scene's values of the `schema` factors, with `live` from probing the family."""
    flat = {k: v for group in scene.factors.values() for k, v in group.items()}
    try:
        probe: Probe | None = Probe(scene)
    except KeyError:
        probe = None
    known = {f.name for f in family_factors(scene.family)}
    out = []
    for f in schema:
        if f.name in flat:
            live = probe is None or f.name not in known or probe.matters(f.name)
            out.append(read_factor(f, flat[f.name]).model_copy(update={"live": live}))
    return tuple(out)


def live_under(family: str, context: dict[str, Any]) -> set[str] | None:
    """Factors that change a family's default scene with `context` applied (None: unknown family), its
    extended factors too (a core program has none of them, so asks about none)."""
    try:
        fam = get_family(family)
    except KeyError:
        return None
    schema = fam.schema("extended")
    factors = fam.default_factors("extended")
    for f in schema:
        if f.name in context:
            factors[f.group][f.name] = context[f.name]
    probe = Probe(fam.make_scene(factors))
    return {f.name for f in schema if probe.matters(f.name)}


def scene_context(scene: SceneSpec, name: str) -> dict[str, Any]:
    """`Probe.context` of a scene, {} for an unknown family or factor."""
    try:
        probe = Probe(scene)
        probe.fam.factor(name)
    except KeyError:
        return {}
    return probe.context(name)
