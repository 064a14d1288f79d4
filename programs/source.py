"""Reading and rewriting program source text without running it: module-level literal assignments
(`FACTORS = (...)`, `SUBGOALS = [...]`) are read with `ast.literal_eval`, and a generation program's
`FACTORS` literal is re-rendered from its schema when a factor is edited, so source and schema agree.
"""

from __future__ import annotations

import ast
import json
import tomllib
from typing import Any

from programs.model import GenerationProgram, TrainingProgram
from sim.factors import FactorDef

FACTOR_KEYS = ("name", "group", "type", "default", "range", "ood_range", "choices", "ood_choices", "kind",
               "hard_side", "hard_phases", "variant_pins", "doc")
# the literal assignments a training-program file may hold, and the program fields they fill
TRAINING_LITERALS = {"FAMILY": "family", "MODE_ID": "mode_id", "PARENT_ID": "parent_id", "ROUND": "round",
                     "DIAGNOSIS": "diagnosis", "ROLES": "roles", "BETA": "beta", "GAMMA": "gamma",
                     "CHUNK": "chunk", "SUBGOALS": "subgoals", "LATCHED": "latched",
                     "REFINEMENT": "refinement"}


def module_literals(source: str) -> dict[str, tuple[Any, ast.Assign]]:
    """Module-level `NAME = <literal>` assignments: name → (value, node). Non-literals are skipped."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = (ast.literal_eval(node.value), node)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    return out


def schema_from_source(source: str) -> tuple[FactorDef, ...] | None:
    """The factor schema declared by a `FACTORS = (...)` literal of dicts, or None if there is none."""
    lit = module_literals(source).get("FACTORS")
    if lit is None:
        return None
    return tuple(FactorDef(**d) for d in lit[0])


def py_literal(v: Any) -> str:
    """A Python literal for `v`, strings in double quotes (house style)."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, tuple | list):
        inner = ", ".join(py_literal(x) for x in v)
        return f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else \
            (f"({inner})" if isinstance(v, tuple) else f"[{inner}]")
    if isinstance(v, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _split_string(text: str, room: int) -> list[str]:
    """`text` as adjacent string literals of at most `room` characters each (split at spaces)."""
    parts, cur = [], ""
    for word in text.split(" "):
        if cur and len(py_literal(cur + " " + word)) > room:
            parts.append(cur + " ")
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return [py_literal(p) for p in parts + [cur]]


def _factor_lines(f: FactorDef, width: int) -> list[str]:
    data = f.model_dump(exclude_defaults=True)
    data.setdefault("default", f.default)
    lines, cur, indent = [], "    {", "     "
    keys = [k for k in FACTOR_KEYS if k in data]
    for i, k in enumerate(keys):
        end = "}," if i == len(keys) - 1 else ", "
        piece = f"{py_literal(k)}: {py_literal(data[k])}{end}"
        if len(cur) + len(piece.rstrip()) > width and cur.strip() != "{":
            lines.append(cur.rstrip())
            cur = indent
        if len(cur) + len(piece.rstrip()) > width and isinstance(data[k], tuple) and len(data[k]) > 1:
            # a long tuple of choices: its items over several lines, aligned after the opening parenthesis
            head = f"{cur}{py_literal(k)}: ("
            row, pad = head, " " * len(head)
            items = [py_literal(x) for x in data[k]]
            for j, item in enumerate(items):
                item += ")" + end if j == len(items) - 1 else ", "
                if len(row) + len(item.rstrip()) > width and row.strip():
                    lines.append(row.rstrip())
                    row = pad
                row += item
            cur = row
            continue
        if len(cur) + len(piece.rstrip()) > width and isinstance(data[k], str):  # a long doc: wrap it
            head = f"{cur}{py_literal(k)}: "
            chunks = _split_string(data[k], width - len(head) - 2)
            lines += [head + chunks[0]] + [" " * len(head) + c for c in chunks[1:-1]]
            cur = " " * len(head) + chunks[-1] + end if len(chunks) > 1 else lines.pop() + end
            continue
        cur += piece
    lines.append(cur.rstrip())
    return lines


def schema_literal(factors: tuple[FactorDef, ...], width: int = 110) -> str:
    """`FACTORS = (...)`: one dict per factor, lines at most `width` characters (long docs excepted)."""
    lines = ["FACTORS = ("]
    for f in factors:
        lines += _factor_lines(f, width)
    return "\n".join(lines + [")"])


def sync_schema(source: str, factors: tuple[FactorDef, ...]) -> str:
    """`source` with its `FACTORS` literal replaced by one rendered from `factors` (unchanged if the
    source declares none)."""
    lit = module_literals(source).get("FACTORS")
    if lit is None:
        return source
    node = lit[1]
    lines = source.splitlines(keepends=True)
    tail = "\n" if lines[node.end_lineno - 1].endswith("\n") else ""
    head, rest = "".join(lines[: node.lineno - 1]), "".join(lines[node.end_lineno:])
    return head + schema_literal(factors) + tail + rest


def training_fields(source: str) -> dict[str, Any]:
    """The `TrainingProgram` fields a training-program file declares as literals."""
    lits = module_literals(source)
    return {field: lits[name][0] for name, field in TRAINING_LITERALS.items() if name in lits}


def generation_from_source(source: str, **meta: Any) -> GenerationProgram:
    """A generation program from a self-describing source file (`FAMILY` and `FACTORS` literals);
    `meta` sets lineage fields (mode_id, parent_id, round, diagnosis)."""
    lits = module_literals(source)
    if "FAMILY" not in lits:
        raise ValueError("the source declares no FAMILY = \"...\" literal")
    factors = schema_from_source(source) or ()
    return GenerationProgram(family=lits["FAMILY"][0], source=source, factors=factors, **meta)


def training_from_source(source: str, **meta: Any) -> TrainingProgram:
    """A training program from a file of literal assignments (see `TRAINING_LITERALS`)."""
    return TrainingProgram.model_validate({**training_fields(source), **meta})


def training_from_toml(text: str, **meta: Any) -> TrainingProgram:
    """A training program from TOML whose keys are the program's fields (a family's seed, `train.toml`)."""
    return TrainingProgram.model_validate({**tomllib.loads(text), **meta})
