"""The expression language of training programs: Python expression syntax, parsed with `ast`, checked
once against an allowlist, then compiled into plain Python closures (no eval/exec) that take a
`WorldState`.

Allowed: numbers, strings (entity names), True/False, the names in `vocab.CONSTANTS` and the program's
roles, calls of `vocab.FUNCTIONS` by bare name with positional arguments, `and`/`or`/`not`, `+ - * / **`,
unary ±, comparisons (chained too) and `a if c else b`. Everything else — attributes, subscripts,
lambdas, comprehensions, keyword arguments, containers, f-strings, `:=` — is rejected with the column.
Division by zero gives ±inf/nan instead of raising; a potential clips or zeroes such values.
"""

from __future__ import annotations

import ast
import copy
import difflib
import math
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from programs.vocab import CONSTANTS, FUNCTIONS, Type
from sim.world import WorldState

Evaluator = Callable[[WorldState], Any]
MAX_LENGTH = 2000  # characters per expression
MAX_NODES = 400  # AST nodes per expression: bounds compile time and closure depth


class ExprError(ValueError):
    """A rejected expression: where it is (e.g. "subgoal 2 'grasp' .done"), the 1-based column, why."""

    def __init__(self, message: str, col: int | None = None, where: str = "") -> None:
        self.message, self.col, self.where = message, col, where
        at = ", ".join(p for p in (where, f"col {col}" if col else "") if p)
        super().__init__(f"{at}: {message}" if at else message)


def _div(a: float, b: float) -> float:
    if b:
        return a / b
    return math.copysign(math.inf, a) if a else math.nan


def _pow(a: float, b: float) -> float:
    try:
        return float(a) ** float(b)
    except (OverflowError, ZeroDivisionError):
        return math.inf


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: _div, ast.Pow: _pow,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_REJECTED = {
    ast.Attribute: "attribute access", ast.Subscript: "subscripts", ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions", ast.NamedExpr: "assignment expressions (:=)",
    ast.JoinedStr: "f-strings", ast.List: "lists", ast.Tuple: "tuples", ast.Dict: "dicts", ast.Set: "sets",
    ast.Starred: "starred arguments", ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield",
    ast.Slice: "slices",
}


@dataclass(frozen=True)
class Checked:
    """A parsed, checked expression, ready to compile against role bindings."""

    text: str
    tree: ast.expr
    type: Type
    roles: frozenset[str]  # role names it uses
    entities: frozenset[str]  # string literals passed where an entity name is expected
    entity_roles: frozenset[str]  # roles passed where an entity name is expected


def parse(text: str, *, expect: Type = "any", roles: Collection[str] = (), where: str = "") -> Checked:
    """Parse and check one expression; raises `ExprError` at the first problem."""
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters", None, where)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ExprError(f"syntax error: {e.msg}", e.offset, where) from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ExprError(f"expression has more than {MAX_NODES} parts", None, where)
    checker = _Checker(frozenset(roles), where)
    typ = checker.visit(tree)
    if expect == "bool" and typ not in ("bool", "any"):
        raise ExprError(f"a `done` expression must be true/false, this one is a {typ} "
                        "(compare it, e.g. `dist('ee', 'object') < 0.02`)", tree.col_offset + 1, where)
    if expect == "num" and typ not in ("num", "bool", "any"):
        raise ExprError(f"a `progress` expression must be a number, this one is a {typ}", tree.col_offset + 1,
                        where)
    return Checked(text, tree, typ, frozenset(checker.roles), frozenset(checker.entities),
                   frozenset(checker.entity_roles))


def _suggest(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""


class _Checker:
    """Walks the tree once: allowlist, names, call arities and types."""

    def __init__(self, roles: frozenset[str], where: str) -> None:
        self.allowed_roles, self.where = roles, where
        self.roles: set[str] = set()
        self.entities: set[str] = set()
        self.entity_roles: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> ExprError:
        return ExprError(message, getattr(node, "col_offset", -1) + 1, self.where)

    def visit(self, node: ast.AST) -> Type:
        for bad, what in _REJECTED.items():
            if isinstance(node, bad):
                raise self.fail(node, f"{what}: not allowed in expressions")
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"{type(node).__name__} is not allowed in expressions")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Type:
        v = node.value
        if isinstance(v, bool):
            return "bool"
        if isinstance(v, int | float):
            return "num"
        if isinstance(v, str):
            return "str"
        raise self.fail(node, f"constant {v!r} is not allowed (numbers, strings, True/False only)")

    def _Name(self, node: ast.Name) -> Type:
        if node.id.startswith("__"):
            raise self.fail(node, f"name {node.id!r} is not allowed")
        if node.id in CONSTANTS:
            return "num"
        if node.id in self.allowed_roles:
            self.roles.add(node.id)
            return "any"
        if node.id in FUNCTIONS:
            raise self.fail(node, f"{node.id!r} is a function: call it, e.g. {node.id}(...)")
        known = sorted(self.allowed_roles | set(CONSTANTS))
        raise self.fail(node, f"unknown name {node.id!r} (roles and constants: {', '.join(known) or 'none'})"
                        + _suggest(node.id, known))

    def _BoolOp(self, node: ast.BoolOp) -> Type:
        for v in node.values:
            self.expect(v, "bool", "operand of and/or")
        return "bool"

    def _UnaryOp(self, node: ast.UnaryOp) -> Type:
        if isinstance(node.op, ast.Not):
            self.expect(node.operand, "bool", "operand of `not`")
            return "bool"
        if isinstance(node.op, ast.UAdd | ast.USub):
            self.expect(node.operand, "num", "operand of unary minus/plus")
            return "num"
        raise self.fail(node, "bitwise operators are not allowed")

    def _BinOp(self, node: ast.BinOp) -> Type:
        if type(node.op) not in _BINOPS:
            raise self.fail(node, f"operator {type(node.op).__name__} is not allowed (use + - * / **)")
        self.expect(node.left, "num", "arithmetic operand")
        self.expect(node.right, "num", "arithmetic operand")
        return "num"

    def _Compare(self, node: ast.Compare) -> Type:
        for op in node.ops:
            if type(op) not in _CMPOPS:
                raise self.fail(node, f"comparison {type(op).__name__} is not allowed (use < <= > >= == !=)")
        types = [self.visit(node.left)] + [self.visit(c) for c in node.comparators]
        ordered = any(not isinstance(op, ast.Eq | ast.NotEq) for op in node.ops)
        if ordered and "str" in types:
            raise self.fail(node, "strings can only be compared with == or !=")
        return "bool"

    def _IfExp(self, node: ast.IfExp) -> Type:
        self.expect(node.test, "bool", "condition of `if`")
        a, b = self.visit(node.body), self.visit(node.orelse)
        if "any" in (a, b):
            return b if a == "any" else a
        if a != b and {a, b} != {"num", "bool"}:
            raise self.fail(node, f"the two branches of `if` have different types ({a}, {b})")
        return a if a == b else "num"

    def _Call(self, node: ast.Call) -> Type:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, "only plain function names can be called")
        name = node.func.id
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise self.fail(node, f"unknown function {name!r}" + _suggest(name, FUNCTIONS))
        if node.keywords:
            raise self.fail(node.keywords[0].value, f"{name}(): keyword arguments are not allowed")
        n = len(node.args)
        if n < fn.required or (not fn.variadic and n > len(fn.params)):
            raise self.fail(node, f"{name}() takes {fn.arity()} argument(s), got {n}")
        for i, arg in enumerate(node.args):
            want = fn.params[0] if fn.variadic else fn.params[i]
            self.expect(arg, want, f"argument {i + 1} of {name}()")
            if want == "str" and isinstance(arg, ast.Constant):
                self.entities.add(arg.value)
            elif want == "str" and isinstance(arg, ast.Name):
                self.entity_roles.add(arg.id)
        return fn.returns

    def expect(self, node: ast.AST, want: Type, what: str) -> Type:
        got = self.visit(node)
        ok = want == "any" or got in (want, "any") or (want == "num" and got == "bool")
        if not ok:
            raise self.fail(node, f"{what} must be a {want}, got a {got}")
        return got


def live(checked: Checked, bindings: Mapping[str, Any], expect: Type = "any", where: str = "") -> Checked:
    """`checked` with every `if` whose condition the bindings decide replaced by the branch it takes, as
    `compile_expr` builds it: the entities a scene's program can reach. (One program serves a family whose
    goals differ in kind: `opened(subject, target) if test == 'opened' else on(subject, target)` passes a
    drawer scene's level, a number, nowhere an entity is expected.)"""
    builder = _Builder(bindings, None)

    class _Prune(ast.NodeTransformer):
        def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if names <= set(bindings) | set(CONSTANTS):
                _, const, value = builder.build(node.test)
                if const:
                    return self.visit(node.body if value else node.orelse)
            return self.generic_visit(node)

    tree = _Prune().visit(copy.deepcopy(checked.tree))
    return checked if ast.dump(tree) == ast.dump(checked.tree) else parse(
        ast.unparse(tree), expect=expect, roles=checked.roles, where=where)


# ---- compilation into closures ---------------------------------------------------------------------
class Memo:
    """Shares state-reading calls with equal arguments (e.g. `grasped('object')` in three subgoals)
    across the evaluators compiled with it. Its owner calls `clear()` before each new state; an
    evaluator that shares a memo is therefore not thread-safe."""

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}
        self.slots: dict[tuple, int] = {}

    def slot(self, key: tuple) -> int:
        return self.slots.setdefault(key, len(self.slots))

    def clear(self) -> None:
        self.values.clear()


def compile_expr(checked: Checked, bindings: Mapping[str, Any] | None = None, memo: Memo | None = None
                 ) -> Evaluator:
    """A fast evaluator `f(state)` for a checked expression; roles are replaced by their bound values.
    With a `memo`, calls that read the state are computed once per state (see `Memo`)."""
    bindings = bindings or {}
    missing = sorted(checked.roles - set(bindings))
    if missing:
        raise ExprError(f"roles {missing} have no binding", None, "")
    fn, is_const, value = _Builder(bindings, memo).build(checked.tree)
    return (lambda s, v=value: v) if is_const else fn


Built = tuple[Evaluator, bool, Any]  # (closure, is it constant, constant value)


_MISSING = object()


class _Builder:
    def __init__(self, bindings: Mapping[str, Any], memo: Memo | None) -> None:
        self.bindings, self.memo = bindings, memo

    def build(self, node: ast.expr) -> Built:
        return getattr(self, f"_{type(node).__name__}")(node)

    @staticmethod
    def const(v: Any) -> Built:
        return (lambda s: v), True, v

    def _Constant(self, node: ast.Constant) -> Built:
        return self.const(node.value)

    def _Name(self, node: ast.Name) -> Built:
        return self.const(CONSTANTS[node.id] if node.id in CONSTANTS else self.bindings[node.id])

    def _BoolOp(self, node: ast.BoolOp) -> Built:
        parts = [self.build(v)[0] for v in node.values]
        if isinstance(node.op, ast.And):
            if len(parts) == 2:
                a, b = parts
                return (lambda s: bool(a(s)) and bool(b(s))), False, None
            return (lambda s: all(p(s) for p in parts)), False, None
        if len(parts) == 2:
            a, b = parts
            return (lambda s: bool(a(s)) or bool(b(s))), False, None
        return (lambda s: any(p(s) for p in parts)), False, None

    def _UnaryOp(self, node: ast.UnaryOp) -> Built:
        f, c, v = self.build(node.operand)
        op = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}[type(node.op)]
        if c:
            return self.const(op(v))
        return (lambda s: op(f(s))), False, None

    def _BinOp(self, node: ast.BinOp) -> Built:
        op = _BINOPS[type(node.op)]
        (fa, ca, va), (fb, cb, vb) = self.build(node.left), self.build(node.right)
        if ca and cb:
            return self.const(op(va, vb))
        if cb:
            return (lambda s: op(fa(s), vb)), False, None
        if ca:
            return (lambda s: op(va, fb(s))), False, None
        return (lambda s: op(fa(s), fb(s))), False, None

    def _Compare(self, node: ast.Compare) -> Built:
        ops = [_CMPOPS[type(o)] for o in node.ops]
        terms = [self.build(node.left)] + [self.build(c) for c in node.comparators]
        if len(ops) == 1:
            op, (fa, ca, va), (fb, cb, vb) = ops[0], terms[0], terms[1]
            if ca and cb:  # two constants, e.g. a role bound to the goal's test: `test == 'opened'`
                return self.const(op(va, vb))
            if cb:
                return (lambda s: op(fa(s), vb)), False, None
            return (lambda s: op(fa(s), fb(s))), False, None
        fs = [t[0] for t in terms]

        def chain(s: WorldState) -> bool:
            left = fs[0](s)
            for op, f in zip(ops, fs[1:], strict=True):
                right = f(s)
                if not op(left, right):
                    return False
                left = right
            return True

        return chain, False, None

    def _IfExp(self, node: ast.IfExp) -> Built:
        ft, ct, vt = self.build(node.test)
        if ct:  # only the branch taken is built: the other may not fit the bindings (`live`)
            return self.build(node.body if vt else node.orelse)
        (fa, _, _), (fb, _, _) = self.build(node.body), self.build(node.orelse)
        return (lambda s: fa(s) if ft(s) else fb(s)), False, None

    def _Call(self, node: ast.Call) -> Built:
        fn = FUNCTIONS[node.func.id]
        args = [self.build(a) for a in node.args]
        impl = fn.impl
        if all(c for _, c, _ in args):
            vals = tuple(v for _, _, v in args)
            if not fn.stateful:
                return self.const(impl(*vals))
            if self.memo is not None:
                return self.memoised(impl, vals, self.memo.slot((fn.name, vals))), False, None
            if len(vals) == 1:
                (a0,) = vals
                return (lambda s: impl(s, a0)), False, None
            if len(vals) == 2:
                a0, a1 = vals
                return (lambda s: impl(s, a0, a1)), False, None
            return (lambda s: impl(s, *vals)), False, None
        fs = [f for f, _, _ in args]
        if fn.stateful:
            return (lambda s: impl(s, *[f(s) for f in fs])), False, None
        if len(fs) == 3:
            f0, f1, f2 = fs
            return (lambda s: impl(f0(s), f1(s), f2(s))), False, None
        return (lambda s: impl(*[f(s) for f in fs])), False, None

    def memoised(self, impl: Callable, vals: tuple, slot: int) -> Evaluator:
        values = self.memo.values

        def f(s: WorldState) -> Any:
            v = values.get(slot, _MISSING)
            if v is _MISSING:
                v = values[slot] = impl(s, *vals)
            return v

        return f
