"""Lazy re-exports for package `__init__` files: a package names its public symbols and the modules they
live in, and each module is imported on first use (so `import agents` pulls in neither torch nor
LangGraph, and `import sim` stays light enough for the sandbox).

    _LAZY = {"RunConfig": "agents.config", "parse_expr": ("programs.expr", "parse")}
    __all__, __getattr__ = lazy_exports(__name__, _LAZY)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str | tuple[str, str]],
                 eager: tuple[str, ...] = ()) -> tuple[list[str], Callable[[str], Any]]:
    """(`__all__`, module `__getattr__`) for `package`: each name of `table` is the attribute of the same
    name (or the one given in a `(module, attribute)` pair) of its module, imported on first access;
    `eager` names are already bound in the package and only join `__all__`."""

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = target if isinstance(target, tuple) else (target, name)
        return getattr(importlib.import_module(module), attr)

    return sorted({*eager, *table}), __getattr__
