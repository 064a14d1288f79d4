"""The seed library: every registered task family's scene builder (its seed generation program) and seed
training program, the starting point of every run. Both live in the family's folder
(`sim/families/<family>/scene.py` and `train.toml`); the loader reads them as text — programs never import
or run them; generation programs run in the sandbox.
"""

from __future__ import annotations

import functools
from pathlib import Path

from programs.model import GenerationProgram, TrainingProgram
from programs.source import generation_from_source, training_from_toml


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


@functools.cache
def seed_library() -> dict[str, tuple[GenerationProgram, TrainingProgram]]:
    """family → (seed generation program, seed training program)."""
    out = {}
    for family in seed_families():
        gen, train = seed_paths(family)
        out[family] = (generation_from_source(gen.read_text()), training_from_toml(train.read_text()))
    return out


SEED_FAMILIES = seed_families()

__all__ = ["SEED_FAMILIES", "seed_families", "seed_library", "seed_paths"]
