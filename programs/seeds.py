"""The seed library: every registered task family's scene builder (its seed generation program) and seed
training program, the starting point of every run. Both live in the family's folder
(`sim/families/<family>/scene.py` and `train.toml`); the loader reads them as text — programs never import
or run them; generation programs run in the sandbox.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from programs.model import GenerationProgram, TrainingProgram
from programs.source import generation_from_source, sync_schema, training_from_toml
from sim.extension import Space
from sim.factors import FactorDef


def seed_families() -> tuple[str, ...]:
    """Every registered task family (each has its seed programs in its folder)."""
    from sim.families import FAMILIES

    return tuple(FAMILIES.names())


def seed_paths(family: str) -> tuple[Path, Path]:
    """(generation program file, training program file) of a family's seeds."""
    from sim.families import FAMILIES, get_family

    if family not in FAMILIES.names():
        raise KeyError(f"no seed programs for family {family!r}; seeds exist for: "
                       f"{', '.join(seed_families())}")
    return get_family(family).seed_paths()


# the factor space of the run in progress (`using_space`; the loop sets it around every node from
# `RunConfig.space`): what `seed_library` serves when not told
_SPACE: contextvars.ContextVar[Space] = contextvars.ContextVar("coda_space", default="core")


@contextlib.contextmanager
def using_space(space: Space) -> Iterator[None]:
    """Within: `seed_library()` (no space given) serves `space`'s seed programs."""
    token = _SPACE.set(space)
    try:
        yield
    finally:
        _SPACE.reset(token)


def seed_library(space: Space | None = None) -> dict[str, tuple[GenerationProgram, TrainingProgram]]:
    """family → (seed generation program, seed training program) of a factor space (None: the one in use,
    `using_space`, "core" outside a run): the family's scene builder as it is (`core`), or that text
    extended (`extended_source`; a family without extended factors, one of LIBERO's, keeps its own)."""
    return _library(space or _SPACE.get())


@functools.cache
def _library(space: Space) -> dict[str, tuple[GenerationProgram, TrainingProgram]]:
    from sim.families import get_family

    out = {}
    for family in seed_families():
        gen, train = seed_paths(family)
        text = gen.read_text()
        if space == "extended" and get_family(family).extension:
            text = extended_source(text, get_family(family).schema("extended"))
        out[family] = (generation_from_source(text), training_from_toml(train.read_text()))
    return out


# what an extended seed program adds after its family's scene builder: `generate` becomes the extension
# applied to the core one (`sim.extension.extend`), which the sandbox lets a program import
EXTENDED_TAIL = '''

# ---- the extended factor space (sim.extension): the scene above, with distractors, obstacles, clutter,
# scaled objects, the table, the arm's start and the noise on actions and observations as FACTORS say
from sim.extension import extend


def generate(rng, **factors):
    """The core scene (`core_generate`) with the extended factors applied."""
    return extend(core_generate, FACTORS, rng, factors)
'''


def extended_source(core: str, factors: Sequence[FactorDef]) -> str:
    """A scene builder's text as an extended seed program: its `FACTORS` literal rewritten to `factors`
    (the family's and `sim.extension.EXTENSION`), its `generate` renamed `core_generate`, and a `generate`
    that applies the extension to it (`EXTENDED_TAIL`)."""
    fn = next(n for n in ast.parse(core).body if isinstance(n, ast.FunctionDef) and n.name == "generate")
    lines = core.splitlines(keepends=True)
    lines[fn.lineno - 1] = lines[fn.lineno - 1].replace("def generate(", "def core_generate(", 1)
    return sync_schema("".join(lines), tuple(factors)).rstrip("\n") + "\n" + EXTENDED_TAIL


def seed_generation(family: str, space: Space | None = None) -> GenerationProgram:
    """The family's seed generation program in `space` (None: the running run's, set around every node by
    `agents.graph.build.instrument` with `programs.seeds.using_space`): what the writers edit, exploration
    variants move and domain randomization widens."""
    return seed_library(space)[family][0]


def background_program(family: str, background: str = "seed", widen: float = 0.5,
                       space: Space | None = None) -> GenerationProgram:
    """What a generated arm's program (an exploration variant, a difficulty mode, a composite) starts from
    and a diagnosis is verified on (`RunConfig.background`): the family's seed program in `space`, or with
    "dr" domain randomization's (`dr_program`), so every factor the arm does not edit is drawn from its
    widened range; the factors it edits are set as on the seed program. Edits are always measured against
    this program."""
    seed = seed_generation(family, space)
    return seed if background == "seed" else dr_program(seed, widen)


def dr_program(base: GenerationProgram, widen: float) -> GenerationProgram:
    """Domain randomization: every numeric range widened (`programs.factor_space.widened_range`) and every
    choice drawn from all the values its schema declares, the unseen ones too."""
    from programs.edits import edit_many
    from programs.factor_space import widened_range

    changes: dict[str, Any] = {}
    for f in base.factors:
        new = widened_range(f, widen)
        if new is not None:
            changes[f.name] = new
        elif f.type == "choice" and f.ood_choices:
            changes[f.name] = (*f.choices, *f.ood_choices)
    program = edit_many(base, changes, mode_id="dr", diagnosis=f"domain randomization: ranges widened by "
                        f"{widen:.0%} of their width per side")
    return program


SEED_FAMILIES = seed_families()

__all__ = ["SEED_FAMILIES", "background_program", "dr_program", "extended_source", "seed_families",
           "seed_generation", "seed_library", "seed_paths", "using_space"]
