"""Factor edits: a new generation program whose schema pins or re-ranges one factor, with lineage.

The diagnosis validator uses them twice per diagnosis: a *targeted* edit moves the suspected factor
into its hard region, a *control* edit moves another factor by a comparable amount (DESIGN §5.6).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from programs.model import GenerationProgram
from programs.source import sync_schema
from sim.factors import FactorDef


def _is_range(v: Any) -> bool:
    return isinstance(v, Sequence) and not isinstance(v, str)


def edited_factor(f: FactorDef, value_or_range: Any) -> FactorDef:
    """`f` with a new default/range (numbers) or default/choices (choices).

    A scalar pins the factor (default = value; range (v, v) or choices (v,)); a pair (lo, hi) re-ranges
    a number factor (default clipped into it); a sequence sets a choice factor's choices (default kept
    if still allowed, else the first). The OOD range/choices stay a superset of the new in-distribution
    ones, widened if needed.
    """
    d = f.model_dump()
    if f.type == "choice":
        choices = tuple(value_or_range) if _is_range(value_or_range) else (value_or_range,)
        if not choices:
            raise ValueError(f"factor {f.name!r}: a choice factor needs at least one choice")
        d["choices"] = choices
        d["default"] = f.default if f.default in choices else choices[0]
        rest = tuple(c for c in (f.ood_choices or ()) if c not in choices)
        d["ood_choices"] = rest or None
        return FactorDef(**d)
    cast = int if f.type == "int" else float
    if _is_range(value_or_range):
        if len(value_or_range) != 2:
            raise ValueError(f"factor {f.name!r}: a range is (lo, hi), got {value_or_range!r}")
        lo, hi = (cast(x) for x in value_or_range)
        d["default"] = cast(min(max(f.default, lo), hi))
    else:
        lo = hi = cast(value_or_range)
        d["default"] = lo
    if lo > hi:
        raise ValueError(f"factor {f.name!r}: range ({lo}, {hi}) has lo > hi")
    d["range"] = (float(lo), float(hi))
    if f.ood_range is not None:
        d["ood_range"] = (min(f.ood_range[0], lo), max(f.ood_range[1], hi))
    return FactorDef(**d)


def edit(program: GenerationProgram, factor: str, value_or_range: Any, *, diagnosis: str | None = None,
         mode_id: str | None = None, round_no: int | None = None) -> GenerationProgram:
    """A new program (new id, `parent_id` = the old id) whose `factor` is pinned or re-ranged (see
    `edited_factor`). A `FACTORS` literal in the source is rewritten to match. `diagnosis`, `mode_id`
    and `round` default to the parent's."""
    names = [f.name for f in program.factors]
    if factor not in names:
        close = difflib.get_close_matches(factor, names, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"no factor {factor!r} in program {program.hash8}.{hint} Factors: {names}")
    factors = tuple(edited_factor(f, value_or_range) if f.name == factor else f for f in program.factors)
    return GenerationProgram.model_validate({
        **program.model_dump(exclude={"id"}),
        "factors": factors, "source": sync_schema(program.source, factors), "parent_id": program.id,
        "diagnosis": program.diagnosis if diagnosis is None else diagnosis,
        "mode_id": mode_id or program.mode_id, "round": program.round if round_no is None else round_no,
    })


def edit_many(program: GenerationProgram, changes: dict[str, Any], **kw: Any) -> GenerationProgram:
    """Several factor edits as one new program (one lineage step)."""
    out = program
    for name, value in changes.items():
        out = edit(out, name, value, **kw)
    return GenerationProgram.model_validate({**out.model_dump(exclude={"id"}), "parent_id": program.id})
