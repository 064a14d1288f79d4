"""The factor space: what a factor of a task family is and where it may go — one module for the facts
every agent reads (kind, hard side), the reference definition a program's factor is judged against, and
the range algebra of edits.

A factor's facts live on its `FactorDef` in the family's folder (`sim/families/<family>/scene.py`); a
program written by an LLM may omit them, so lookups go through the family's registered definition.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from programs.errors import ProgramRejected
from programs.model import GenerationProgram
from sim.factors import EditValue, FactorDef


@functools.cache
def _by_name() -> dict[str, dict[str, FactorDef]]:
    """factor name → family → the family's definition (every registered family, its extended factors too)."""
    from sim.families import FAMILIES, get_family

    out: dict[str, dict[str, FactorDef]] = {}
    for family in FAMILIES.names():
        for f in get_family(family).schema("extended"):
            out.setdefault(f.name, {})[family] = f
    return out


def family_factor(family: str, name: str) -> FactorDef | None:
    """The registered definition of factor `name` in `family`, or None."""
    return _by_name().get(name, {}).get(family)


def _fact(family: str, name: str, fact: str, default: Any) -> Any:
    """One fact of factor `name`: the family's own; for a family that does not define the name (or an
    unknown family), the value every family that has the name agrees on; else `default`."""
    f = family_factor(family, name)
    if f is not None:
        return getattr(f, fact)
    values = {getattr(f, fact) for f in _by_name().get(name, {}).values()}
    return values.pop() if len(values) == 1 else default


def kind_of(family: str, name: str) -> str:
    """The kind of factor `name` is in `family` ("subject_yaw", "mass", ...; "other" if unknown)."""
    return _fact(family, name, "kind", "other")


def hard_side(family: str, name: str, phase: str = "") -> int | None:
    """The side of factor `name`'s range that makes `phase` harder (+1 high, −1 low; None: both)."""
    f = family_factor(family, name)
    if f is not None:
        return f.hard_side_in(phase)
    phases = _fact(family, name, "hard_phases", None)
    return None if phases is not None and phase not in phases else _fact(family, name, "hard_side", None)


def family_factors(family: str, fallback: Sequence[FactorDef] = ()) -> tuple[FactorDef, ...]:
    """Every factor the family defines (the reference ID ranges): its own and those of the extended space
    (a program of either space is judged by the same definitions, and a core program names none of the
    extended ones); `fallback` for unknown families."""
    from sim.families import get_family

    try:
        return tuple(get_family(family).schema("extended"))
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


def resolve_factor(name: str, program: GenerationProgram, source_family: str | None = None) -> str:
    """`name` if the program has it, else the program's factor of the same kind and suffix (a mode founded
    in another family: `obj_yaw` in pick_place is `piece_yaw` in stack_insert, `target_x` is `base_x`);
    `ProgramRejected` if there is none."""
    names = [f.name for f in program.factors]
    if name in names:
        return name
    kind = kind_of(source_family or "", name)
    same = [n for n in names if kind != "other" and kind_of(program.family, n) == kind]
    suffix = [n for n in same if n.rsplit("_", 1)[-1] == name.rsplit("_", 1)[-1]]  # obj_x → base_x, not _y
    if suffix or len(same) == 1:
        return (suffix or same)[0]
    raise ProgramRejected(f"the {program.family} program has no factor {name!r} (or one of its kind "
                          f"{kind!r}); factors: {names}")


# ---- where a factor may go -------------------------------------------------------------------------------
def reference(program: GenerationProgram, name: str) -> FactorDef:
    """The factor's reference definition: the family's where it has one, else the program's."""
    return next(f for f in reference_schema(program.family, program.factors) if f.name == name)


def bounds(ref: FactorDef, allow_ood: bool) -> tuple[float, float]:
    """Where an edit of a number factor may go: its ID range, or its OOD range when allowed."""
    lo, hi = ref.ood_range if allow_ood and ref.ood_range else ref.range  # type: ignore[misc]
    return float(lo), float(hi)


def allowed_choices(ref: FactorDef, allow_ood: bool) -> tuple[Any, ...]:
    """The values an edit of a choice factor may use: its choices, plus the unseen ones when allowed."""
    return tuple(ref.choices or ()) + (tuple(ref.ood_choices or ()) if allow_ood else ())


def movable(ref: FactorDef) -> bool:
    """A generator can move it to another value the schema declares: a number whose range or OOD range is
    wider than a point, or a choice with two values or more, seen or unseen. Every generator — exploration
    variants, domain randomization, the critic's edits, the writers — reaches the whole schema, as the
    `ood` split does (a choice no seed demonstration uses, such as pick-place's unseen targets, included)."""
    if ref.type == "choice":
        return len(ref.choices or ()) + len(ref.ood_choices or ()) >= 2
    widest = ref.ood_range or ref.range
    return widest is not None and widest[1] > widest[0]


def seen_movable(ref: FactorDef) -> bool:
    """A matched edit can move it inside what the seed programs draw: a float range wider than a point, or
    two seen choices or more (a verification control stays among values the policy was trained on)."""
    if ref.type == "choice":
        return len(ref.choices or ()) >= 2
    return ref.type == "float" and ref.range is not None and ref.range[1] > ref.range[0]


def check_value(program: GenerationProgram, name: str, value: Any, allow_ood: bool) -> tuple[Any, str | None]:
    """`value` coerced to the factor's type, or an error message a model can act on."""
    ref = reference(program, name)
    if ref.type == "choice":
        allowed = allowed_choices(ref, allow_ood)
        match = [c for c in allowed if c == value or str(c).lower() == str(value).strip().lower()]
        if not match:
            return None, (f"value {value!r} is not a choice of factor {name!r}; allowed: "
                          f"{', '.join(map(repr, allowed))}")
        return match[0], None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        try:
            value = float(str(value))
        except ValueError:
            return None, f"factor {name!r} is a number ({ref.type}); {value!r} is not"
    lo, hi = bounds(ref, allow_ood)
    if not lo - 1e-9 <= float(value) <= hi + 1e-9:
        return None, f"value {value} of factor {name!r} is outside its allowed range [{lo:g}, {hi:g}]"
    return float(value), None


# ---- edits ---------------------------------------------------------------------------------------------
def band_edit(ref: FactorDef, value: float, side: int, *, band: float, allow_ood: bool,
              widest: float = 0.5) -> EditValue:
    """"At least as extreme as `value`": from `value` outwards on `side` (+1 high, −1 low), at least `band`
    and at most `widest` of the ID range wide, within the allowed bounds; an int factor is pinned. Up to an
    ID bound the band runs out to that bound; past it (OOD allowed on that side) it starts at the value
    and stops `widest` further out, so the value that failed stays in the band."""
    lo, hi = bounds(ref, allow_ood)
    if ref.type == "int":
        return int(min(max(round(value), lo), hi))
    rlo, rhi = ref.range  # type: ignore[misc]
    w = span(ref)
    if side > 0:
        if hi <= rhi:  # the ID bound: out to it
            return (_round(min(max(value, hi - widest * w), hi - band * w)), _round(hi))
        start = min(max(value, lo), hi - band * w)
        return (_round(start), _round(min(hi, start + widest * w)))
    if lo >= rlo:
        return (_round(lo), _round(max(min(value, lo + widest * w), lo + band * w)))
    end = max(min(value, hi), lo + band * w)
    return (_round(max(lo, end - widest * w)), _round(end))


def span(ref: FactorDef) -> float:
    """The width edits of a number factor are measured in: its ID range's, or for a point range (an
    extended factor whose seed distribution is its default) its OOD range's."""
    rlo, rhi = ref.range  # type: ignore[misc]
    olo, ohi = ref.ood_range or ref.range  # type: ignore[misc]
    return rhi - rlo if rhi > rlo else ohi - olo


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def side_of(ref: FactorDef, value: float, position: float) -> int:
    """Which side of the range an edit goes to: the value's, or the hard side for a central value."""
    if abs(position) >= 0.05:
        return 1 if position > 0 else -1
    return ref.hard_side if ref.hard_side is not None else 1


def side_edit(ref: FactorDef, side: str | None, values: Sequence[str], *, band: float,
              allow_ood: bool) -> EditValue:
    """The mode's end of the range: the top or bottom `band` of the ID range (stretching as far past it
    when OOD is allowed), or the mode's choice values."""
    if ref.type == "choice":
        allowed = allowed_choices(ref, allow_ood)
        parsed = (json.loads(x) if isinstance(x, str) else x for x in values)
        chosen = tuple(v for v in parsed if v in allowed)
        if not chosen:
            raise ProgramRejected(f"the mode names no allowed value of choice factor {ref.name!r}: "
                                  f"{list(values)}")
        return chosen
    if side not in ("low", "high"):
        raise ProgramRejected(f"factor {ref.name!r}: a mode without a side needs a diagnosis edit")
    lo, hi = bounds(ref, allow_ood)
    rlo, rhi = ref.range  # type: ignore[misc]
    w = band * span(ref)
    inner = w if rhi > rlo else 0.0  # a point range's band starts at the point and goes out
    a, b = (rhi - inner, min(rhi + w, hi)) if side == "high" else (max(rlo - w, lo), rlo + inner)
    if ref.type == "int":
        return (int(round(a)), int(round(b)))
    return (float(f"{a:.6g}"), float(f"{b:.6g}"))


def back_off(ref: FactorDef, current: FactorDef) -> EditValue:
    """The program's current range of a number factor moved halfway towards the ID range's centre (the
    rules writer's repair when scenes from the hard end fail validation)."""
    if current.type == "choice" or current.range is None or ref.range is None:
        raise ProgramRejected(f"cannot back off the choice factor {ref.name!r}: the rules writer has no "
                              "other template for it")
    lo, hi = current.range
    centre = (ref.range[0] + ref.range[1]) / 2
    shift = (centre - (lo + hi) / 2) / 2
    if abs(shift) < 1e-9:
        raise ProgramRejected(f"factor {ref.name!r} is already centred; nothing left to back off")
    a, b = lo + shift, hi + shift
    return (int(round(a)), int(round(b))) if ref.type == "int" else (float(f"{a:.6g}"), float(f"{b:.6g}"))


# ---- matched control edits (verification) ---------------------------------------------------------------
def _centre_half(ref: FactorDef) -> tuple[float, float]:
    lo, hi = ref.range  # type: ignore[misc]
    return (lo + hi) / 2, (hi - lo) / 2


def magnitude(ref: FactorDef, value: EditValue) -> tuple[float, float]:
    """(signed offset of the edit's middle from the range centre, band width), both as shares of the
    factor's ID half-range / range; a choice: (0 default, 0.5 other seen value, 1.5 unseen value; 0)."""
    if ref.type == "choice":
        vals = value if isinstance(value, tuple | list) else (value,)
        if all(v == ref.default for v in vals):
            return 0.0, 0.0
        return (0.5 if all(v in (ref.choices or ()) for v in vals) else 1.5), 0.0
    _, half = _centre_half(ref)
    lo, hi = (value if isinstance(value, tuple | list) else (value, value))
    width = (float(hi) - float(lo)) / (2 * half) if half > 0 else 0.0  # a point range has no band to match
    return ref.position((float(lo) + float(hi)) / 2), width


def matched_edit(ref: FactorDef, offset: float, width: float, rng: np.random.Generator,
                 allow_ood: bool) -> EditValue:
    """An edit of `ref` with the given relative offset and width, towards its hard side (random for
    factors hard on both sides), inside the allowed bounds."""
    if ref.type == "choice":
        seen = [c for c in (ref.choices or ()) if c != ref.default]
        unseen = list(ref.ood_choices or ()) if allow_ood else []
        pool = unseen if offset >= 1.0 and unseen else seen if offset > 0.0 and seen else [ref.default]
        return pool[int(rng.integers(len(pool)))]
    side = ref.hard_side or (1 if rng.random() < 0.5 else -1)
    centre, half = _centre_half(ref)
    lo, hi = bounds(ref, allow_ood)
    mid = centre + side * abs(offset) * half
    w = min(width * 2 * half, hi - lo)
    a = min(max(mid - w / 2, lo), hi - w)
    if ref.type == "int":
        return int(round(min(max(mid, lo), hi)))
    if w == 0:
        return float(f"{a:.6g}")
    return (float(f"{a:.6g}"), float(f"{min(a + w, hi):.6g}"))


# ---- exploration variants and domain randomization -------------------------------------------------------
def variant_sides(f: FactorDef) -> list[Any]:
    """Where a single-factor variant can move `f`: an unseen choice (a seen one when it has none, unless
    `f.variant_pins` is off: then nowhere), or "low"/"high" for a number."""
    if f.type == "choice":
        return list(f.ood_choices or (f.choices if f.variant_pins else ()) or ())
    lo, hi = f.range  # type: ignore[misc]
    olo, ohi = f.ood_range or f.range  # type: ignore[misc]
    # a side with neither an OOD part nor an ID range to take a third of would move nothing
    return [side for side, room in (("low", olo < lo), ("high", ohi > hi)) if room or hi > lo]


def variant_edit(f: FactorDef, side: Any) -> EditValue:
    """Where a single-factor variant moves `f`: "low"/"high" take the outer half of the part of its OOD
    range below/above its in-distribution range (the outer third of the ID range on a side with no OOD
    part); a choice side pins that value. Inside the ID range the bootstrap policy solves nearly
    everything, and a probe that never fails teaches nothing."""
    if f.type == "choice":
        return side
    lo, hi = f.range  # type: ignore[misc]
    olo, ohi = f.ood_range or f.range  # type: ignore[misc]
    third = (hi - lo) / 3
    if side == "low":
        value = (olo, (olo + lo) / 2) if olo < lo else (lo, lo + third)
    else:
        value = ((hi + ohi) / 2, ohi) if ohi > hi else (hi - third, hi)
    return (round(value[0]), round(value[1])) if f.type == "int" else value


def widened_range(f: FactorDef, widen: float) -> tuple[float, float] | None:
    """Domain randomization: `f`'s ID range widened by `widen` × its width on each side, within its OOD
    range (the physically meaningful limits the schema declares); a point range (the extended space's
    factors, whose seed distribution is the core scene) widened by `widen` × its OOD part on each side.
    None for a choice or no change."""
    if f.type == "choice" or f.range is None:
        return None
    lo, hi = f.range
    olo, ohi = f.ood_range or f.range
    if hi > lo:
        w = (hi - lo) * widen
        new = (max(olo, lo - w), min(ohi, hi + w))
    else:
        new = (lo - (lo - olo) * widen, hi + (ohi - hi) * widen)
    if f.type == "int":
        new = (round(new[0]), round(new[1]))
    return None if tuple(new) == (lo, hi) else new


# ---- cross-family adaptation -------------------------------------------------------------------------------
def mapped_value(src: FactorDef, value: EditValue, dst: FactorDef, *, allow_ood: bool = False) -> EditValue:
    """An edit of factor `src` carried to factor `dst` of another family by meaning: a number (or range)
    keeps its place relative to the ID range (the affine map of `src.range` onto `dst.range`), clipped to
    `dst`'s allowed bounds; choices carry over only where `dst` allows them. `ProgramRejected` when
    nothing carries over."""
    if src.type == "choice" or dst.type == "choice":
        if src.type != dst.type:
            raise ProgramRejected(f"{src.name} ({src.type}) cannot map onto {dst.name} ({dst.type})")
        vals = value if isinstance(value, tuple | list) else (value,)
        allowed = allowed_choices(dst, allow_ood)
        kept = tuple(v for v in vals if v in allowed)
        if not kept:
            raise ProgramRejected(f"none of {list(vals)} is a choice of {dst.name}: {list(allowed)}")
        return kept if isinstance(value, tuple | list) else kept[0]
    (slo, shi), (dlo, dhi) = src.range, dst.range  # type: ignore[misc]
    lo, hi = bounds(dst, allow_ood)

    def carry(x: Any) -> float:
        if shi <= slo:  # a point range (the extension's factors, the same in every family): the offset
            return min(max(dlo + float(x) - slo, lo), hi)
        t = (float(x) - slo) / (shi - slo)
        return min(max(dlo + t * (dhi - dlo), lo), hi)

    if isinstance(value, tuple | list):
        a, b = sorted((carry(value[0]), carry(value[1])))
        return (round(a), round(b)) if dst.type == "int" else (_round(a), _round(b))
    return round(carry(value)) if dst.type == "int" else _round(carry(value))


def adapted_edits(program: GenerationProgram, source_seed: GenerationProgram, target: GenerationProgram,
                  *, allow_ood: bool = False) -> dict[str, EditValue]:
    """The edits that make `program` (written for `source_seed`'s family) differ from its seed, carried to
    `target`'s factors by meaning (`resolve_factor`: same kind, same suffix) and values (`mapped_value`).
    Factors that do not carry over are dropped; `ProgramRejected` when none does."""
    seed_defs = {f.name: f for f in source_seed.factors}
    out: dict[str, EditValue] = {}
    dropped = []
    for f in program.factors:
        base = seed_defs.get(f.name)
        if base is not None and (f.range, f.choices, f.default) == (base.range, base.choices, base.default):
            continue  # not edited
        value: EditValue = f.choices if f.type == "choice" else f.range  # type: ignore[assignment]
        try:
            name = resolve_factor(f.name, target, program.family)
            out[name] = mapped_value(reference(source_seed, f.name) if base else f, value,
                                     reference(target, name), allow_ood=allow_ood)
        except ProgramRejected as e:
            dropped.append(str(e))
    if not out:
        raise ProgramRejected(f"no edit of the {program.family} program {program.hash8} carries over to "
                              f"{target.family}" + (f" ({'; '.join(dropped)})" if dropped else ""))
    return out
