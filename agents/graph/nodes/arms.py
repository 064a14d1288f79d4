"""Program files in the run directory and the template-made generation programs of the baselines
(domain randomization, uniform/scalar single-factor variants). Programs are stored as `programs.render`
writes them (readable `.py` + `.json` sidecar); state refers to the sidecar's relative path."""

from __future__ import annotations

from typing import Any

from agents.graph.deps import Deps
from memory.types import slug
from programs.model import GenerationProgram, TrainingProgram


def save_program(deps: Deps, program: Any, round_no: int) -> str:
    """Write `program` under programs/round_XX/ (idempotent: same content, same file); its .json path."""
    from programs.render import write_program

    d = deps.run.round_dir("programs", round_no)
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
    """Factors a variant can move (`programs.factor_space.movable`)."""
    from programs.factor_space import movable

    return [f for f in program.factors if movable(f)]


def variant_id(factor: str, side: Any) -> str:
    """Mode id of a single-factor variant: `var_<factor>_<side or value>`."""
    return f"var_{slug(factor)}_{slug(str(side))}"


def variant_program(base: GenerationProgram, factor: str, side: Any, round_no: int) -> GenerationProgram:
    """`base` with one factor moved past its training range (`programs.factor_space.variant_edit`)."""
    from programs.edits import edit
    from programs.factor_space import variant_edit

    value = variant_edit(base.factor(factor), side)
    return edit(base, factor, value, mode_id=variant_id(factor, side), round_no=round_no,
                diagnosis=f"variant: {factor} -> {value}")


def dr_program(base: GenerationProgram, widen: float) -> GenerationProgram:
    """Domain randomization: every numeric range widened (`programs.factor_space.widened_range`)."""
    from programs.edits import edit_many
    from programs.factor_space import widened_range

    changes = {}
    for f in base.factors:
        new = widened_range(f, widen)
        if new is not None:
            changes[f.name] = new
    program = edit_many(base, changes, mode_id="dr", diagnosis=f"domain randomization: ranges widened by "
                        f"{widen:.0%} of their width per side")
    return program
