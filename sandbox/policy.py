"""What a generation program may contain: the import allowlist, forbidden names/attributes, the AST check.

The check runs twice: in the parent before a worker is used (cheap rejections, exit code 2), and again in
the task process before `compile` (defence in depth). `guard_tree` then rewrites every attribute read
`x.a` into `_sbx_getattr(x, "a")`, so that a runtime guard also vets attributes reached dynamically.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from sandbox.results import ErrorKind, SandboxError

PROGRAM_FILENAME = "<program>"
GUARD_NAME = "_sbx_getattr"  # the runtime attribute guard, injected into the program's builtins
ENTRY_POINT = "generate"

SCENE_NAMES = frozenset({"SceneSpec", "ObjectSpec", "FixtureSpec", "Predicate", "LiberoRef", "Conditions",
                         "FACTOR_GROUPS", "PREDICATE_NAMES", "factor_values", "grouped", "fill"})
# the extended factor space's schema and the function that applies it to a family's core scene
EXTENSION_NAMES = frozenset({"EXTENSION", "extend"})
TYPING_NAMES = frozenset({"Any", "Optional", "Union", "Sequence", "Iterable", "Iterator", "Mapping",
                          "Callable", "Literal", "Tuple", "List", "Dict"})
# module -> names `from module import ...` may take (None: any public name of the real module).
ALLOWED_MODULES: dict[str, frozenset[str] | None] = {
    "numpy": None, "numpy.random": None, "numpy.linalg": None, "math": None, "random": None,
    "itertools": None, "typing": TYPING_NAMES, "sim": SCENE_NAMES, "sim.scene": SCENE_NAMES,
    "sim.extension": EXTENSION_NAMES, "__future__": frozenset({"annotations"}),
}

FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "globals", "locals", "vars", "breakpoint", "input", "help", "exit",
    "quit", "setattr", "delattr", "memoryview", "copyright", "credits", "license",
})
# Attribute names that lead out of the program: frames, code objects, modules, raw memory, format strings.
FORBIDDEN_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code",
    "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next",
    "co_code", "co_consts", "co_names", "mro", "format", "format_map",
    "builtins", "os", "sys", "subprocess", "ctypes", "ctypeslib", "f2py", "testing", "importlib", "inspect",
    "gc", "io", "pathlib", "shutil", "socket", "signal", "pickle", "marshal", "tempfile", "platform",
    "sysconfig", "types", "operator", "warnings", "mtrand", "bit_generator", "as_strided", "stride_tricks",
    "memmap", "from_dlpack",
})
SAFE_DUNDER_ATTRS = frozenset({"__init__", "__name__"})  # `super().__init__(...)`, `type(x).__name__`
SAFE_DUNDER_METHODS = frozenset({
    "__init__", "__repr__", "__str__", "__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__",
    "__ge__", "__len__", "__iter__", "__next__", "__contains__", "__getitem__", "__call__", "__bool__",
    "__add__", "__sub__", "__mul__", "__truediv__", "__neg__",
})
FORBIDDEN_KEYWORDS = frozenset({"refcheck", "metaclass"})  # ndarray.resize(refcheck=False) frees live memory
MAX_NODES = 200_000


@dataclass(frozen=True)
class Violation:
    """One reason to refuse a program, at a line of its source."""

    kind: ErrorKind
    line: int | None
    message: str


def attr_allowed(name: str) -> bool:
    """Whether the attribute `name` may be read (also used by the runtime guard). Only an exact `str`: a
    subclass's own `startswith` or `__eq__` would be program code answering for itself."""
    if type(name) is not str:
        return False
    if name in SAFE_DUNDER_ATTRS:
        return True
    return not name.startswith("_") and name not in FORBIDDEN_ATTRS


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class _Checker(ast.NodeVisitor):
    def __init__(self, imported: set[str]) -> None:
        self.found: list[Violation] = []
        self.imported = imported  # names bound by import statements (modules, SceneSpec, ...)

    def _bad(self, node: ast.AST, message: str, kind: ErrorKind = "rejected_code") -> None:
        self.found.append(Violation(kind, getattr(node, "lineno", None), message))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES or alias.name == "__future__":
                self._bad(node, f"import of {alias.name!r} is not allowed; allowed modules: "
                          f"{', '.join(sorted(set(ALLOWED_MODULES) - {'__future__'}))}", "rejected_import")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level or mod not in ALLOWED_MODULES:
            self._bad(node, f"import from {'.' * node.level}{mod!r} is not allowed; allowed modules: "
                      f"{', '.join(sorted(set(ALLOWED_MODULES) - {'__future__'}))}", "rejected_import")
            return
        names = ALLOWED_MODULES[mod]
        for alias in node.names:
            if alias.name == "*":
                self._bad(node, f"`from {mod} import *` is not allowed; import the names you use",
                          "rejected_import")
            elif (names is not None and alias.name not in names) or not attr_allowed(alias.name):
                allowed = f"; allowed: {', '.join(sorted(names))}" if names else ""
                self._bad(node, f"cannot import {alias.name!r} from {mod!r}{allowed}", "rejected_import")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("_sbx"):
            self._bad(node, f"the name {name!r} is reserved by the sandbox")
        elif name == "__name__" and isinstance(node.ctx, ast.Load):
            pass
        elif _is_dunder(name):
            self._bad(node, f"the name {name!r} is not allowed")
        elif name in FORBIDDEN_NAMES:
            self._bad(node, f"`{name}` is not available in generation programs")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (not isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                and node.value.id in self.imported):
            self._bad(node, f"assigning or deleting attributes of the imported {node.value.id!r} "
                      "is not allowed")
        if not attr_allowed(node.attr):
            hint = "; use an f-string" if node.attr in ("format", "format_map") else ""
            self._bad(node, f"access to attribute {node.attr!r} is not allowed{hint}")
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in FORBIDDEN_KEYWORDS:
            self._bad(node, f"the keyword argument {node.arg!r} is not allowed")
        elif node.arg is None and isinstance(node.value, ast.Dict):  # f(**{"refcheck": False})
            for key in node.value.keys:
                if key is None or not (isinstance(key, ast.Constant) and type(key.value) is str):
                    self._bad(node, "`**{...}` needs literal string keys; pass the keywords by name")
                elif key.value in FORBIDDEN_KEYWORDS:
                    self._bad(node, f"the keyword argument {key.value!r} is not allowed")
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.Lambda) -> None:
        name = getattr(node, "name", "")
        if name.startswith("_sbx") or (_is_dunder(name) and name not in SAFE_DUNDER_METHODS):
            self._bad(node, f"defining {name!r} is not allowed")
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None and (_is_dunder(a.arg) or a.arg.startswith("_sbx")):
                self._bad(node, f"the parameter name {a.arg!r} is not allowed")
        self.generic_visit(node)

    visit_FunctionDef = _function
    visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if _is_dunder(node.name) or node.name.startswith("_sbx"):
            self._bad(node, f"the class name {node.name!r} is not allowed")
        if any(k.arg is None for k in node.keywords) or any(isinstance(b, ast.Starred) for b in node.bases):
            self._bad(node, "`*` and `**` are not allowed in a class definition's bases and keywords")
        self.generic_visit(node)

    def _refuse(self, node: ast.AST) -> None:
        what = {"Match": "`match` statements", "AsyncFunctionDef": "async functions", "Await": "`await`",
                "AsyncFor": "`async for`", "AsyncWith": "`async with`"}[type(node).__name__]
        self._bad(node, f"{what} are not allowed in generation programs")

    visit_Match = visit_AsyncFunctionDef = visit_Await = visit_AsyncFor = visit_AsyncWith = _refuse


_TOO_DEEP = Violation("rejected_code", None, "the program is nested too deeply; flatten the expression")


def _syntax_violation(err: SyntaxError) -> Violation:
    return Violation("syntax", err.lineno, f"{err.msg}")


def find_violations(source: str, *, max_source_bytes: int = 200_000,
                    entry_point: str = ENTRY_POINT) -> tuple[ast.Module | None, list[Violation]]:
    """Parse and check `source`; returns the tree (None when it does not parse) and every violation."""
    if len(source.encode("utf-8", "replace")) > max_source_bytes:
        return None, [Violation("rejected_code", None, f"program is larger than {max_source_bytes} bytes")]
    try:
        tree = ast.parse(source, filename=PROGRAM_FILENAME)
    except SyntaxError as err:
        return None, [_syntax_violation(err)]
    except (ValueError, MemoryError, RecursionError) as err:  # null bytes, absurd nesting
        return None, [Violation("syntax", None, f"cannot parse the program ({type(err).__name__}: {err})")]
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        return None, [Violation("rejected_code", None, f"program has more than {MAX_NODES} syntax nodes")]
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    checker = _Checker(imported)
    try:
        checker.visit(tree)
    except RecursionError:
        return None, [_TOO_DEEP]
    found = checker.found
    if entry_point and not any(isinstance(n, ast.FunctionDef) and n.name == entry_point for n in tree.body):
        found.append(Violation("rejected_code", None,
                               f"the program must define `def {entry_point}(rng, **factors)` at top level"))
    if not found:
        try:  # symbol-table errors ('return' outside function, ...) only show up when compiling
            compile(tree, PROGRAM_FILENAME, "exec", dont_inherit=True)
        except SyntaxError as err:
            found.append(_syntax_violation(err))
        except (RecursionError, MemoryError):
            return None, [_TOO_DEEP]
    return tree, found


def violations_to_error(source: str, found: list[Violation]) -> SandboxError:
    """One `SandboxError` for the writer: the first violation's kind and line, every message listed."""
    found = sorted(found, key=lambda v: (v.line is None, v.line or 0))
    first = found[0]
    lines = source.splitlines()
    parts = []
    for v in found[:8]:
        where = f"line {v.line}: " if v.line else ""
        parts.append(f"{where}{v.message}")
        if v.line and 0 < v.line <= len(lines):
            parts.append(f"    {lines[v.line - 1].strip()}")
    if len(found) > 8:
        parts.append(f"... and {len(found) - 8} more")
    return SandboxError(kind=first.kind, message=first.message, line=first.line, traceback="\n".join(parts))


def check_source(source: str, *, max_source_bytes: int = 200_000) -> SandboxError | None:
    """The static check: None when the program may run, otherwise the error to report."""
    _, found = find_violations(source, max_source_bytes=max_source_bytes)
    return violations_to_error(source, found) if found else None


class _Guard(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        call = ast.Call(func=ast.Name(id=GUARD_NAME, ctx=ast.Load()),
                        args=[node.value, ast.Constant(value=node.attr)], keywords=[])
        return ast.copy_location(call, node)


def guard_tree(tree: ast.Module) -> ast.Module:
    """Rewrite attribute reads `x.a` into `_sbx_getattr(x, "a")`, keeping the program's line numbers."""
    return ast.fix_missing_locations(_Guard().visit(tree))
