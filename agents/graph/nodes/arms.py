"""Program files in the run directory and the template-made generation programs of the baselines
(domain randomization, uniform/scalar single-factor variants). Programs are stored as `programs.render`
writes them (readable `.py` + `.json` sidecar); state refers to the sidecar's relative path."""

from __future__ import annotations

from typing import Any

from agents.graph.deps import Deps
from memory.types import slug
from programs.model import GenerationProgram, TrainingProgram


def save_program(deps: Deps, program: Any, round: int) -> str:
    """Write `program` under programs/round_XX/ (idempotent: same content, same file); its .json path."""
    from programs.render import write_program

    d = deps.run.round_dir("programs", round)
    sidecar = d / f"{program.file_stem}.json"
    if not sidecar.exists():
        write_program(program, d)
    return deps.run.rel(sidecar)


def load_program(deps: Deps, rel: str) -> Any:
    from programs.render import load_program as load

    return load(deps.run.abs(rel))


def seed_programs(deps: Deps, family: str) -> tuple[str, str]:
    """The family's seed generation and training programs, written to programs/round_00/ if missing."""
    from programs.seeds import seed_library

    gen, train = seed_library()[family]
    return save_program(deps, gen, 0), save_program(deps, train, 0)


def seed_generation(family: str) -> GenerationProgram:
    from programs.seeds import seed_library

    return seed_library()[family][0]


def seed_training(family: str) -> TrainingProgram:
    from programs.seeds import seed_library

    return seed_library()[family][1]


def static_errors(program: GenerationProgram) -> str | None:
    """Every static problem of a generation program (structure/schema, then the sandbox's allowlist), as
    the text a writer reads; None when it may run."""
    from programs.checks import check_generation, format_errors
    from sandbox.policy import check_source

    errors = check_generation(program)
    if errors:
        return format_errors(errors)
    violation = check_source(program.source)
    return str(violation) if violation is not None else None


def editable_factors(program: GenerationProgram) -> list[Any]:
    """Factors a variant can move: a float range wider than a point, or more than one choice."""

    def movable(f: Any) -> bool:
        if f.type == "choice":
            return len(f.choices or ()) > 1
        return f.type == "float" and f.range is not None and f.range[1] > f.range[0]

    return [f for f in program.factors if movable(f)]


def variant_id(factor: str, side: Any) -> str:
    """Mode id of a single-factor variant: `var_<factor>_<side or value>`."""
    return f"var_{slug(factor)}_{slug(str(side))}"


def variant_sides(f: Any) -> list[Any]:
    """Where a single-factor variant can move `f`: an unseen choice (a seen one when it has none), or
    "low"/"high" for a number."""
    if f.type == "choice":
        return list(f.ood_choices or f.choices)
    return ["low", "high"]


def variant_program(base: GenerationProgram, factor: str, side: Any, round: int) -> GenerationProgram:
    """`base` with one factor moved past its training range: "low"/"high" take the outer half of the part
    of the factor's OOD range below/above its in-distribution range (the outer third of the ID range on a
    side with no OOD part); a choice side pins that value. Variants probe where the policy was not
    trained: inside the ID range the bootstrap policy solves nearly everything, and a probe that never
    fails teaches nothing."""
    from programs.edits import edit

    f = base.factor(factor)
    if f.type == "choice":
        value: Any = side
    else:
        lo, hi = f.range
        olo, ohi = f.ood_range or f.range
        third = (hi - lo) / 3
        # the outer half of the OOD part: clearly outside what the policy trained on
        if side == "low":
            value = (olo, (olo + lo) / 2) if olo < lo else (lo, lo + third)
        else:
            value = ((hi + ohi) / 2, ohi) if ohi > hi else (hi - third, hi)
        if f.type == "int":
            value = (round(value[0]), round(value[1]))
    return edit(base, factor, value, mode_id=variant_id(factor, side), round=round,
                diagnosis=f"variant: {factor} -> {value}")


def dr_program(base: GenerationProgram, widen: float) -> GenerationProgram:
    """Domain randomization: every numeric range widened by `widen` × its width on each side, within the
    factor's OOD range (the physically meaningful limits the schema declares)."""
    from programs.edits import edit_many

    changes = {}
    for f in base.factors:
        if f.type == "choice" or f.range is None or f.range[1] <= f.range[0]:
            continue
        lo, hi = f.range
        olo, ohi = f.ood_range or f.range
        w = (hi - lo) * widen
        new = (max(olo, lo - w), min(ohi, hi + w))
        if f.type == "int":
            new = (round(new[0]), round(new[1]))
        if tuple(new) != (lo, hi):
            changes[f.name] = new
    program = edit_many(base, changes, mode_id="dr", diagnosis=f"domain randomization: ranges widened by "
                        f"{widen:.0%} of their width per side")
    return program
