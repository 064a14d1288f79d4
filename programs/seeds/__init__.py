"""The seed library: one hand-written generation program and one training program per task family,
the starting point of every run.

Each family has `<family>_gen.py` (a self-contained `generate(rng, **factors)` with its `FACTORS`
literal) and `<family>_train.py` (literal assignments only). The loader reads both as text — it
never imports or runs them; generation programs run in the sandbox.
"""

from __future__ import annotations

import functools
from pathlib import Path

from programs.model import GenerationProgram, TrainingProgram
from programs.source import generation_from_source, training_from_source

SEED_DIR = Path(__file__).parent
SEED_FAMILIES = ("pick_place", "articulated", "put_inside", "stack_insert")


def seed_paths(family: str) -> tuple[Path, Path]:
    """(generation program file, training program file) of a family's seeds."""
    gen, train = SEED_DIR / f"{family}_gen.py", SEED_DIR / f"{family}_train.py"
    if not gen.exists():
        raise KeyError(f"no seed programs for family {family!r}; seeds exist for: {', '.join(SEED_FAMILIES)}")
    return gen, train


@functools.cache
def seed_library() -> dict[str, tuple[GenerationProgram, TrainingProgram]]:
    """family → (seed generation program, seed training program)."""
    out = {}
    for family in SEED_FAMILIES:
        gen, train = seed_paths(family)
        out[family] = (generation_from_source(gen.read_text()), training_from_source(train.read_text()))
    return out


__all__ = ["SEED_DIR", "SEED_FAMILIES", "seed_library", "seed_paths"]
