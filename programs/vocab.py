"""What `done`/`progress` expressions may call: the predicates of `sim.predicates`, a few read-outs of
`WorldState` fields, and small math helpers. Each entry carries its argument and result types, read
from the function's annotations, so the checker can reject a bad call before anything runs.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sim.predicates import PREDICATES
from sim.world import WorldState

Type = Literal["bool", "num", "str", "any"]
_ANNOTATION: dict[str, Type] = {"bool": "bool", "float": "num", "int": "num", "str": "str"}


@dataclass(frozen=True)
class Fn:
    """One callable name of the expression language."""

    name: str
    impl: Callable
    params: tuple[Type, ...]  # types of the explicit arguments (the state is implicit)
    required: int  # how many of `params` have no default
    returns: Type
    stateful: bool  # called as impl(state, *args)
    variadic: bool = False  # min/max: any number ≥ `required` of `params[0]`
    doc: str = ""

    def arity(self) -> str:
        if self.variadic:
            return f"at least {self.required}"
        n = len(self.params)
        return str(n) if self.required == n else f"{self.required}–{n}"


# one-line meanings for predicates whose docstrings are missing (shown to program writers by `describe`)
_PREDICATE_DOCS = {
    "open_frac": "Open fraction of articulated joint `j`, 0 (closed) … 1 (fully open).",
    "opened": "open_frac(j) >= frac (default 0.75).",
    "closed": "open_frac(j) <= frac (default 0.1).",
    "lifted": "The bottom of object `a` is at least h above the table (default 0.05 m).",
    "dist": "Distance between two positions: objects, regions or \"ee\" (m); see handle_dist for handles.",
    "in_contact": "Entities `a` and `b` touch (objects, fixtures, \"robot\", \"table\").",
}


def _from_signature(name: str, fn: Callable, stateful: bool = True) -> Fn:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1 if stateful else 0:]
    types = tuple(_ANNOTATION.get(str(p.annotation), "any") for p in params)
    required = sum(p.default is inspect.Parameter.empty for p in params)
    ret = str(sig.return_annotation)
    returns: Type = "bool" if ret == "bool" else "num"
    doc = _PREDICATE_DOCS.get(name) or " ".join((inspect.getdoc(fn) or "").split("\n\n")[0].split())
    return Fn(name, fn, types, required, returns, stateful, doc=doc)


# ---- WorldState read-outs ---------------------------------------------------------------------------
def x(s: WorldState, a: str) -> float:
    """x of an object / region / handle / "ee" (m)."""
    return float(s.position(a)[0])


def y(s: WorldState, a: str) -> float:
    """y of an object / region / handle / "ee" (m)."""
    return float(s.position(a)[1])


def z(s: WorldState, a: str) -> float:
    """z (height) of an object / region / handle / "ee" (m)."""
    return float(s.position(a)[2])


def _region_z(s: WorldState, a: str, sign: float) -> float:
    r = s.layout.regions.index(a)
    return float(s.region_pos[r][2] + sign * s.layout.region_half[r][2])


def bottom(s: WorldState, a: str) -> float:
    """Lowest point of an object's world box, or a region's floor (m)."""
    if a in s.layout.objects:
        return float(s.bounds(a)[0][2])
    return _region_z(s, a, -1.0)


def top(s: WorldState, a: str) -> float:
    """Highest point of an object's world box, or a region's top (rim of a bin, hole) (m)."""
    if a in s.layout.objects:
        return float(s.bounds(a)[1][2])
    return _region_z(s, a, 1.0)


def xy_dist(s: WorldState, a: str, b: str) -> float:
    """Horizontal distance between two positions (m)."""
    pa, pb = s.position(a), s.position(b)
    return math.hypot(float(pa[0] - pb[0]), float(pa[1] - pb[1]))


def handle_dist(s: WorldState, j: str) -> float:
    """Distance from the grip site to the handle bar of articulated joint `j` (m)."""
    h = s.handle_pos[s.layout.handles.index(j)]
    return float(np.linalg.norm(s.ee_pos - h))


def gripper(s: WorldState) -> float:
    """Finger opening (m): 0 closed … 0.08 open."""
    return float(s.gripper)


# ---- math -------------------------------------------------------------------------------------------
def clip(v: float, lo: float, hi: float) -> float:
    """v limited to [lo, hi]."""
    return lo if v < lo else hi if v > hi else v


def sqrt(v: float) -> float:
    """Square root of max(v, 0)."""
    return math.sqrt(v) if v > 0 else 0.0


def exp(v: float) -> float:
    """e**v, saturating instead of overflowing."""
    return math.exp(v) if v < 700 else math.inf


def tanh(v: float) -> float:
    """Hyperbolic tangent."""
    return math.tanh(v)


def _abs(v: float) -> float:
    """Absolute value."""
    return abs(v)


ACCESSORS = (x, y, z, bottom, top, xy_dist, handle_dist, gripper)
FUNCTIONS: dict[str, Fn] = {
    **{n: _from_signature(n, f) for n, f in PREDICATES.items()},
    **{f.__name__: _from_signature(f.__name__, f) for f in ACCESSORS},
    **{f.__name__: _from_signature(f.__name__, f, stateful=False) for f in (clip, sqrt, exp, tanh)},
    "abs": Fn("abs", _abs, ("num",), 1, "num", False, doc="Absolute value."),
    "min": Fn("min", min, ("num",), 2, "num", False, variadic=True, doc="Smallest argument."),
    "max": Fn("max", max, ("num",), 2, "num", False, variadic=True, doc="Largest argument."),
}
CONSTANTS: dict[str, float] = {"pi": math.pi}


JOINT_FUNCTIONS = ("open_frac", "opened", "closed", "handle_dist")  # functions of an articulated joint


def describe(names: Collection[str] | None = None) -> str:
    """One line per callable name: what a writer (person or LLM) may use in an expression; with `names`,
    those functions only (and no constants)."""
    lines = []
    for fn in FUNCTIONS.values():
        if names is not None and fn.name not in names:
            continue
        args = ", ".join(fn.params) + (", ..." if fn.variadic else "")
        lines.append(f"{fn.name}({args}) -> {fn.returns}: {fn.doc}")
    if names is None:
        lines.append("constants: " + ", ".join(CONSTANTS))
    return "\n".join(lines)
