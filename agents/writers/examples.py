"""Worked examples for the LLM generation writer, drawn from procedural memory: programs the loop already
wrote for other difficulty modes and kept (a mode's programs are stored only after its diagnosis was
validated, `agents.graph.nodes.remember`).

    lines = procedural_examples(memory, mode, load, k=2)
    write_generation_program(mode, base, llm, examples=lines)

Each example is one line: the stored mode (family, id, what it is) and the edits its generation program
makes to that family's seed program, written as the answer's own `edits` entries — so the model sees the
shape of a good answer to the same question, for another difficulty. Modes on the factor being written (or
the one that plays its role in another family) come first, then the most recent. The mode being written, or
another of the same factor, phase and side, is never an example: an example is another difficulty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memory.types import DifficultyMode
from programs.model import GenerationProgram

MAX_DESCRIPTION = 160  # characters of a stored mode's description shown in its example


def edit_entries(edits: dict[str, Any]) -> list[dict[str, Any]]:
    """Edits (factor → range, choices or value) as the writer's answer writes them (`FactorEditOut`)."""
    out = []
    for name, v in edits.items():
        if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int | float) for x in v):
            out.append({"factor": name, "low": v[0], "high": v[1]})
        elif isinstance(v, tuple | list):
            out.append({"factor": name, "choices": list(v)})
        else:
            out.append({"factor": name, "value": v})
    return out


def procedural_examples(memory: Any, mode: DifficultyMode, load: Callable[[str], GenerationProgram],
                        k: int) -> list[str]:
    """Up to `k` example lines from `memory`'s stored programs of modes other than `mode` (see the module
    docstring); `load` reads a stored generation program from its entry's path. An entry whose edits cannot
    be recovered (its family's seed has no such factor) is skipped, not shown half-made."""
    from programs.errors import ProgramRejected
    from programs.factor_space import adapted_edits, resolve_factor
    from programs.seeds import seed_library

    if k <= 0:
        return []
    seeds = seed_library()
    home = mode.families[0] if mode.families else None

    def role(m: DifficultyMode) -> str | None:
        """The writing mode's family's factor that `m`'s maps onto by meaning (obj_x ~ piece_x)."""
        try:
            return resolve_factor(m.factor, seeds[home][0], m.families[0] if m.families else None)
        except (KeyError, ProgramRejected):
            return None

    mine = role(mode)
    candidates = []
    key = (mode.factor, mode.phase, mode.side)
    for other in memory.modes():
        if other.id == mode.id or (other.factor, other.phase, other.side) == key:
            continue
        same_role = mine is not None and role(other) == mine
        for entry in memory.programs_for(other.id):
            candidates.append((not same_role, -entry.round, other.id, entry, other))
    lines: list[str] = []
    seen: set[str] = set()
    for *_, entry, other in sorted(candidates, key=lambda c: c[:3]):
        if other.id in seen or entry.family not in seeds:
            continue
        seed = seeds[entry.family][0]
        try:
            edits = adapted_edits(load(entry.generation_path), seed, seed, allow_ood=True)
        except ProgramRejected:
            continue
        about = other.description if len(other.description) <= MAX_DESCRIPTION else \
            other.description[: MAX_DESCRIPTION - 1] + "…"
        lines.append(f"{entry.family} mode {other.id} ({about}): edits {json.dumps(edit_entries(edits))}")
        seen.add(other.id)
        if len(lines) == k:
            break
    return lines
