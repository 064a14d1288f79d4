"""Program files in the run directory and the template-made generation programs (domain randomization,
variants, composites of difficulty modes). Programs are stored as `programs.render` writes them (readable
`.py` + `.json` sidecar); state refers to the sidecar's relative path."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from agents.graph.deps import Deps
from memory.types import slug
from programs.model import GenerationProgram, TrainingProgram
from programs.seeds import background_program


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


def writer_examples(deps: Deps, mode: Any) -> list[str]:
    """Worked examples for the generation writer from procedural memory (`agents.writers.examples`): up to
    `WriterConfig.examples` programs of other modes; none without memory, an LLM or that setting."""
    k = deps.config.writer.examples
    if k <= 0 or deps.memory is None or deps.llm is None:
        return []
    from agents.writers.examples import procedural_examples

    return procedural_examples(deps.memory, mode, lambda p: load_program(deps, p), k)  # .py: its sidecar


def seed_programs(deps: Deps, family: str) -> tuple[str, str]:
    """The family's seed generation and training programs in the run's factor space (`RunConfig.space`),
    written to programs/round_00/ if missing."""
    from programs.seeds import seed_library

    gen, train = seed_library(deps.config.space)[family]
    return save_program(deps, gen, 0), save_program(deps, train, 0)


def arm_base(deps: Deps, family: str) -> GenerationProgram:
    """`background_program` for the running run's config, written beside the seed programs (the parent
    every generated program's lineage names)."""
    program = background_program(family, deps.config.background, deps.config.dr_widen)
    if deps.config.background != "seed":
        save_program(deps, program, 0)
    return program


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


def template_made(mode_id: str) -> bool:
    """An arm whose program is made from templates, never by the writer: the seed distribution, domain
    randomization, an exploration variant (`var_*`) or a composite of stored modes (`mix_*`)."""
    return mode_id in ("seed", "dr") or mode_id.startswith(("var_", "mix_"))


VARIANT_ID_MAX = 120  # longer ids (a variant moving every factor) are cut and end in a hash of the whole


def variant_id(moves: Sequence[tuple[str, Any]]) -> str:
    """Mode id of a variant: `var_<factor>_<side or value>` per moved factor, joined by `__`
    (`var_obj_x_low`, `var_obj_x_low__shape_block`); past `VARIANT_ID_MAX` characters cut and ended with
    the whole id's hash (file names are made of it, and a variant that moves a family's every factor
    would name a file over the file system's 255 bytes)."""
    whole = "var_" + "__".join(f"{slug(f)}_{slug(str(side))}" for f, side in moves)
    if len(whole) <= VARIANT_ID_MAX:
        return whole
    return f"{whole[:VARIANT_ID_MAX - 13]}_{hashlib.sha256(whole.encode()).hexdigest()[:12]}"


def variant_program(base: GenerationProgram, moves: Sequence[tuple[str, Any]], round_no: int,
                    ranges: GenerationProgram | None = None) -> GenerationProgram:
    """`base` with every factor of `moves` moved past its training range at once — the range `ranges`
    (default `base`) gives it: the seed program's when `base` is a widened background."""
    from programs.edits import edit_many
    from programs.factor_space import variant_edit

    changes = {f: variant_edit((ranges or base).factor(f), side) for f, side in moves}
    text = ", ".join(f"{f} -> {v}" for f, v in changes.items())
    return edit_many(base, changes, mode_id=variant_id(moves), round_no=round_no,
                     diagnosis=f"variant: {text}")


def mode_edits(program: GenerationProgram, source_base: GenerationProgram, base: GenerationProgram,
               allow_ood: bool) -> dict[str, Any]:
    """What makes a mode's generation program differ from the program it was written on (`source_base`,
    its family's `background_program`), carried onto `base`'s factors (`programs.factor_space.adapted_edits`;
    the same family: the edits themselves). `ProgramRejected` when nothing carries over."""
    from programs.factor_space import adapted_edits

    return adapted_edits(program, source_base, base, allow_ood=allow_ood)


def composite_id(modes: Sequence[str]) -> str:
    """Mode id of the composite of several difficulty modes: `mix_` + a short hash of their ids."""
    import hashlib

    return "mix_" + hashlib.sha256("|".join(sorted(modes)).encode()).hexdigest()[:8]


def composite_program(base: GenerationProgram, parts: Sequence[tuple[str, dict[str, Any]]],
                      round_no: int) -> GenerationProgram | None:
    """`base` with the edits of several difficulty modes applied together (`parts`: (mode id, its edits),
    strongest first; on a factor two modes both edit, the earlier one's edit is kept). None when fewer
    than two modes contribute an edit of their own."""
    from programs.edits import edit_many

    changes: dict[str, Any] = {}
    used = []
    for mode, edits in parts:
        fresh = {f: v for f, v in edits.items() if f not in changes}
        if fresh:
            changes.update(fresh)
            used.append(mode)
    if len(used) < 2:
        return None
    text = "; ".join(used)
    return edit_many(base, changes, mode_id=composite_id(used), round_no=round_no,
                     diagnosis=f"composite of difficulty modes {text}: {changes}")
