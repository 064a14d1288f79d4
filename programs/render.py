"""Programs on disk: each program becomes a readable `.py` (Jinja2 template, with a header saying its
family, mode, round, parent and diagnosis) and a `.json` sidecar, named `gen_<mode>_<hash8>` /
`train_<mode>_<hash8>` (DESIGN §7: `runs/<name>/programs/round_03/`).

The sidecar is what `load_program` reads; the `.py` must still be exactly what the program renders
to, so a hand-edited file is reported rather than silently ignored.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jinja2

from programs.model import GenerationProgram, Program, TrainingProgram, program_from_dict
from programs.source import py_literal, training_from_source

TEMPLATES = Path(__file__).parent / "templates"
RULE = "=" * 100
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def _wrap(text: str | None, width: int = 84) -> list[str]:
    if not text:
        return ["none"]
    return [line for para in text.splitlines() for line in (textwrap.wrap(para, width) or [""])]


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _factor_rows(p: GenerationProgram) -> list[str]:
    rows = [("name", "group", "type", "default", "in distribution", "OOD", "doc")]
    for f in p.factors:
        if f.type == "choice":
            dist, ood = ", ".join(map(str, f.choices or ())), ", ".join(map(str, f.ood_choices or ())) or "-"
        else:
            dist = f"[{f.range[0]:g}, {f.range[1]:g}]"
            ood = f"[{f.ood_range[0]:g}, {f.ood_range[1]:g}]" if f.ood_range else "-"
        rows.append((f.name, f.group, f.type, str(f.default), dist, ood, f.doc))
    return _table(rows) if p.factors else ["(none)"]


def _subgoal_rows(p: TrainingProgram) -> list[str]:
    out = []
    for i, g in enumerate(p.subgoals, 1):
        tag = "verifier" if i == p.m else "subgoal"
        out += [f"{i}. {g.name} ({tag}){': ' + g.doc if g.doc else ''}", f"     done:     {g.done}",
                f"     progress: {g.progress}"]
    if p.roles:
        out.append("roles: " + ", ".join(f"{k} = {v}" for k, v in p.roles.items()))
    return out


def render(program: Program) -> str:
    """The readable `.py` text of a program."""
    parent = f"{program.parent_id[:8]} ({program.parent_id})" if program.parent_id else "none (seed)"
    common = {"p": program, "rule": RULE, "diagnosis": _wrap(program.diagnosis), "lit": py_literal,
              "parent": parent, "refinement": _wrap(program.refinement) if program.refinement else []}
    if isinstance(program, GenerationProgram):
        return _ENV.get_template("generation.py.j2").render(**common, factor_rows=_factor_rows(program))
    return _ENV.get_template("training.py.j2").render(**common, subgoal_rows=_subgoal_rows(program))


def source_offset(program: GenerationProgram) -> int:
    """Lines of header above the source in the rendered `.py`: source line L is file line L + offset."""
    text = render(program)
    return text[: len(text) - len(program.source)].count("\n")


def to_json(program: Program) -> str:
    return json.dumps({"kind": program.kind, **program.model_dump(mode="json")}, indent=2) + "\n"


def write_program(program: Program, round_dir: str | Path) -> Path:
    """Write `<stem>.py` and `<stem>.json` into `round_dir`; returns the `.py` path."""
    round_dir = Path(round_dir)
    round_dir.mkdir(parents=True, exist_ok=True)
    py = round_dir / f"{program.file_stem}.py"
    py.write_text(render(program))
    py.with_suffix(".json").write_text(to_json(program))
    return py


def load_program(path: str | Path) -> Program:
    """Read a program written by `write_program` (the `.py` or the `.json` path). A training `.py`
    without a sidecar is read from its literals."""
    path = Path(path)
    py, sidecar = path.with_suffix(".py"), path.with_suffix(".json")
    if not sidecar.exists():
        if py.name.startswith("train_") and py.exists():
            return training_from_source(py.read_text())
        raise FileNotFoundError(f"{sidecar} not found (a generation program needs its .json sidecar)")
    program = program_from_dict(json.loads(sidecar.read_text()))
    if py.exists() and py.read_text() != render(program):
        raise ValueError(f"{py} differs from the program in {sidecar.name}: it was edited by hand. Edit "
                         "programs through `programs.edit` (or delete the .py to regenerate it).")
    return program
