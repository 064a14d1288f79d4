"""The factor space: what a factor of a task family is and where it may go — one module for the facts
every agent reads (kind, hard side), the reference definition a program's factor is judged against, and
the range algebra of edits.

A factor's facts live on its `FactorDef` in the family's folder (`sim/families/<family>/scene.py`); a
program written by an LLM may omit them, so lookups go through the family's registered definition.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sim.factors import FactorDef


@functools.cache
def _by_name() -> dict[str, dict[str, FactorDef]]:
    """factor name → family → the family's definition (every registered family)."""
    from sim.families import FAMILIES, get_family

    out: dict[str, dict[str, FactorDef]] = {}
    for family in FAMILIES.names():
        for f in get_family(family).factors:
            out.setdefault(f.name, {})[family] = f
    return out


def family_factor(family: str, name: str) -> FactorDef | None:
    """The registered definition of factor `name` in `family`; for a family that does not define it (or
    an unknown family), the one definition every family that has the name agrees on, else None."""
    defs = _by_name().get(name, {})
    if family in defs:
        return defs[family]
    facts = {(f.kind, f.hard_side, f.hard_phases) for f in defs.values()}
    return next(iter(defs.values())) if len(facts) == 1 else None


def kind_of(family: str, name: str) -> str:
    """The kind of factor `name` is in `family` ("subject_yaw", "mass", ...; "other" if unknown)."""
    f = family_factor(family, name)
    return f.kind if f is not None else "other"


def hard_side(family: str, name: str, phase: str = "") -> int | None:
    """The side of factor `name`'s range that makes `phase` harder (+1 high, −1 low; None: both)."""
    f = family_factor(family, name)
    return f.hard_side_in(phase) if f is not None else None


def family_factors(family: str, fallback: Sequence[FactorDef] = ()) -> tuple[FactorDef, ...]:
    """The family's registered factor schema (the reference ID ranges); `fallback` for unknown families."""
    from sim.families import get_family

    try:
        return tuple(get_family(family).factors)
    except KeyError:
        return tuple(fallback)


def reference_schema(family: str, schema: Sequence[FactorDef] = ()) -> tuple[FactorDef, ...]:
    """The ranges a scene is judged against: the family's registered definition of each factor, the
    given (program's) definition for factors the family does not know; the family's alone when no
    schema is given."""
    fam = {f.name: f for f in family_factors(family)}
    if not schema:
        return tuple(fam.values())
    return tuple(fam.get(f.name, f) for f in schema)
