"""Static checks before anything runs: syntax, the presence and signature of `generate`, the factor
schema, and the expressions of training programs. Each problem is a `ProgramError` that points at the
program's own line (generation source) or subgoal and column (training expressions) — the text a
writer sees when asked to fix its program.

The import/AST allowlist that makes generated code safe to run lives in `sandbox/`; this module only
checks structure.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from programs.expr import ExprError, live, parse
from programs.model import ROLE_REF, GenerationProgram, Program, TrainingProgram
from programs.source import module_literals, schema_from_source
from sim.scene import SceneSpec

ErrorKind = Literal["syntax", "structure", "signature", "schema", "expression", "role", "entity"]
SCENE_ENTITIES = ("ee", "robot", "table")  # names every scene has besides its objects and fixtures


@dataclass(frozen=True)
class ProgramError:
    """One problem: its kind, a message, and where (1-based line/column of the source, or a subgoal)."""

    kind: ErrorKind
    message: str
    line: int | None = None
    col: int | None = None
    where: str = ""

    def __str__(self) -> str:
        at = ", ".join(p for p in (self.where, f"line {self.line}" if self.line else "",
                                   f"col {self.col}" if self.col else "") if p)
        return f"[{self.kind}] {at + ': ' if at else ''}{self.message}"


class ProgramCheckError(ValueError):
    """Raised by `assert_valid`; carries every error found."""

    def __init__(self, errors: list[ProgramError]) -> None:
        self.errors = errors
        super().__init__("program failed its checks:\n" + "\n".join(f"  {e}" for e in errors))


# ---- generation programs ------------------------------------------------------------------------------
def _generate_def(tree: ast.Module) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "generate":
            return node
    return None


def _signature_errors(fn: ast.FunctionDef, names: set[str]) -> list[ProgramError]:
    """`generate(rng, **factors)`: one positional `rng`, then only parameters a call by factor name fills."""
    a, line = fn.args, fn.lineno
    positional = a.posonlyargs + a.args
    if not positional:
        return [ProgramError("signature", "generate must take `rng` as its first parameter", line)]
    errs = []
    if len(a.posonlyargs) > 1:
        errs.append(ProgramError("signature", "only `rng` may be positional-only", line))
    has_default = [i >= len(positional) - len(a.defaults) for i in range(len(positional))]
    params = list(zip(positional[1:], has_default[1:], strict=True)) + \
        [(p, d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    for p, default in params:
        if p.arg not in names and not default:
            msg = f"parameter {p.arg!r} is no factor and has no default; factors: {sorted(names)}"
            errs.append(ProgramError("signature", msg, p.lineno, p.col_offset + 1))
    if a.kwarg is None:
        missing = sorted(names - {p.arg for p, _ in params})
        if missing:
            errs.append(ProgramError("signature", f"generate does not accept factors {missing}: add them as "
                                     "parameters or take **factors", line))
    return errs


def _returns_value(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))


def _factor_lines(tree: ast.Module) -> dict[str, int]:
    """Factor name → line of its entry in a `FACTORS` literal (for error positions)."""
    lit = module_literals_from_tree(tree).get("FACTORS")
    if lit is None or not isinstance(lit.value, ast.Tuple | ast.List):
        return {}
    out = {}
    for elt in lit.value.elts:
        if isinstance(elt, ast.Dict):
            for k, v in zip(elt.keys, elt.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "name" and isinstance(v, ast.Constant):
                    out[str(v.value)] = elt.lineno
    return out


def module_literals_from_tree(tree: ast.Module) -> dict[str, ast.Assign]:
    return {n.targets[0].id: n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)}


def _schema_errors(p: GenerationProgram, tree: ast.Module, fallback_line: int | None) -> list[ProgramError]:
    lines = _factor_lines(tree)
    errs = []
    for f in p.factors:
        line = lines.get(f.name, fallback_line)
        problems = []
        if not f.contains(f.default):
            allowed = f.choices if f.type == "choice" else f.range
            problems.append(f"default {f.default!r} is outside {allowed}")
        if f.type == "int" and not isinstance(f.default, int):
            problems.append("an int factor needs an int default")
        if f.type == "choice" and f.ood_choices and set(f.ood_choices) & set(f.choices or ()):
            problems.append("OOD choices repeat in-distribution ones")
        errs += [ProgramError("schema", f"factor {f.name!r}: {msg}", line) for msg in problems]
    try:
        declared = schema_from_source(p.source)
    except (ValueError, TypeError) as e:
        return errs + [ProgramError("schema", f"FACTORS literal is not a valid schema: {e}", fallback_line)]
    if declared is not None and declared != p.factors:  # e.g. a literal edited by hand
        diff = sorted({f.name for f in declared} ^ {f.name for f in p.factors}
                      | {a.name for a, b in zip(declared, p.factors, strict=False) if a != b})
        line = module_literals_from_tree(tree)["FACTORS"].lineno
        msg = f"the FACTORS literal disagrees with the program's schema on {diff}"
        errs.append(ProgramError("schema", msg, line))
    return errs


def check_generation(p: GenerationProgram) -> list[ProgramError]:
    """Syntax, `generate` present with a usable signature and a return, a consistent factor schema."""
    try:
        tree = ast.parse(p.source)
    except SyntaxError as e:
        return [ProgramError("syntax", e.msg, e.lineno, e.offset)]
    fn = _generate_def(tree)
    errs: list[ProgramError] = []
    if fn is None:
        errs.append(ProgramError("structure", "no module-level `def generate(rng, **factors)`", None))
    elif isinstance(fn, ast.AsyncFunctionDef):
        errs.append(ProgramError("structure", "generate must be a plain function, not async", fn.lineno))
    else:
        errs += _signature_errors(fn, {f.name for f in p.factors})
        if not _returns_value(fn):
            errs.append(ProgramError("structure", "generate never returns a value (it must return a "
                                     "SceneSpec)", fn.lineno))
    family = module_literals(p.source).get("FAMILY")
    if family is not None and family[0] != p.family:
        errs.append(ProgramError("schema", f"FAMILY = {family[0]!r} but the program is for {p.family!r}",
                                 family[1].lineno))
    return errs + _schema_errors(p, tree, fn.lineno if fn else None)


# ---- training programs ---------------------------------------------------------------------------------
def _entity_ok(name: str, scene: SceneSpec) -> bool:
    known = scene.entity_names() | set(SCENE_ENTITIES)
    return name in known or name.split("/")[0] in {f.name for f in scene.fixtures}


def check_training(tp: TrainingProgram, scene: SceneSpec | None = None) -> list[ProgramError]:
    """Every expression parses and type-checks; roles are well formed; with a `scene`, the roles bind
    and every entity name exists in it."""
    errs: list[ProgramError] = []
    bindings: dict | None = None
    for role, ref in tp.roles.items():
        if ref.startswith("goal") and not ROLE_REF.match(ref):
            errs.append(ProgramError("role", f"role {role!r}: {ref!r} is neither an entity name nor "
                                     "goal[i].args[j] / goal[i].fn", where=f"role {role!r}"))
    if scene is not None and not errs:
        try:
            bindings = tp.bind_roles(scene.goal)
        except ValueError as e:
            errs.append(ProgramError("role", str(e)))
    roles = frozenset(tp.roles)
    for i, g in enumerate(tp.subgoals, 1):
        for field, expect in (("done", "bool"), ("progress", "num")):
            where = f"subgoal {i} {g.name!r} .{field}"
            try:
                c = parse(getattr(g, field), expect=expect, roles=roles, where=where)
            except ExprError as e:
                errs.append(ProgramError("expression", e.message, None, e.col, where))
                continue
            if scene is None or bindings is None:
                continue
            c = live(c, bindings, expect, where)  # the branches this scene's goal takes
            names = set(c.entities) | {str(bindings[r]) for r in c.entity_roles if r in bindings}
            for name in sorted(n for n in names if not _entity_ok(n, scene)):
                errs.append(ProgramError("entity", f"no entity {name!r} in scene {scene.scene_id} (known: "
                                         f"{sorted(scene.entity_names())})", where=where))
    return errs


def check_program(p: Program, scene: SceneSpec | None = None) -> list[ProgramError]:
    """All static checks for either kind of program (an empty list means it may run)."""
    return check_generation(p) if isinstance(p, GenerationProgram) else check_training(p, scene)


def assert_valid(p: Program, scene: SceneSpec | None = None) -> None:
    """Raise `ProgramCheckError` listing every problem, if any."""
    errs = check_program(p, scene)
    if errs:
        raise ProgramCheckError(errs)


def format_errors(errors: Iterable[ProgramError]) -> str:
    return "\n".join(str(e) for e in errors)
