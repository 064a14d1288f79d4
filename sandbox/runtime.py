"""The Python-level sandbox inside a task process: restricted builtins and imports, the attribute guard,
and the audit hook. `Environment()` is built once per warm worker, the rest once per task.

The audit hook (`AuditPolicy`) is installed only in task processes (hooks cannot be removed), then armed
just before the program's code runs. Armed, it allows file opens inside the scratch directory and a
short list of harmless events; everything else (new imports, exec of other code, sockets, subprocesses,
os.*, ctypes, pickle globals, marshal, frame introspection, sys.* hooks, ...) is denied, and every denial
is sticky: the result becomes `forbidden` even if the program caught the exception.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from sandbox.policy import ALLOWED_MODULES, GUARD_NAME, PROGRAM_FILENAME, attr_allowed


class SandboxViolation(BaseException):
    """Raised by the guard or the audit hook. A BaseException, so `except Exception` does not hide it."""


class ImportRejected(ImportError):
    """An import outside the allowlist (an ImportError, so `try: import x except ImportError` works)."""


# Events that are harmless while the program runs (everything not listed, and not checked below, is denied).
# "compile" only builds code (np.load parses .npy headers with ast.literal_eval); running code is the
# "exec" event, allowed for the program's own module code only.
_HARMLESS_EVENTS = frozenset({"builtins.id", "time.sleep", "array.__new__", "compile"})
# Callables a program must never hold, even when some public attribute happens to reference them.
_DANGEROUS_MODULES = ("os", "posix", "sys", "io", "_io", "marshal", "gc", "signal", "subprocess",
                      "importlib", "ctypes", "_ctypes", "socket", "_socket", "pickle", "_pickle", "shutil")
_DANGEROUS_BUILTINS = ("eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr",
                       "globals", "locals", "vars", "breakpoint", "input", "help", "exit", "quit")
_SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "complex", "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex",
    "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object",
    "oct", "ord", "pow", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted",
    "staticmethod", "str", "sum", "super", "tuple", "zip", "NotImplemented", "Ellipsis",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "ImportError", "IndexError",
    "KeyError", "LookupError", "NameError", "NotImplementedError", "OverflowError", "RecursionError",
    "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "Warning",
    "UserWarning", "__build_class__",
)


class CappedText:
    """A write-only text sink that keeps the first `cap` characters and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap, self.parts, self.size, self.dropped = cap, [], 0, 0

    def write(self, text: str) -> int:
        text = str(text)
        room = self.cap - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def flush(self) -> None:
        pass

    def getvalue(self) -> str:
        text = "".join(self.parts)
        return text + (f"\n... [{self.dropped} characters of output dropped]" if self.dropped else "")


def _program_line() -> int | None:
    """The innermost line of the program on the current stack (called with the hook quiet)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == PROGRAM_FILENAME:
            return frame.f_lineno
        frame = frame.f_back
    return None


class AuditPolicy:
    """The audit hook for one task process: scratch-only files, no imports, no escapes."""

    def __init__(self, scratch: str) -> None:
        self.scratch = os.path.realpath(scratch)
        self.armed = False
        self.denials: list[tuple[str, int | None]] = []
        self._program_code: Any = None
        self._trusted = False
        self._busy = False

    def arm(self, program_code: Any) -> None:
        self._program_code, self.armed = program_code, True

    @contextlib.contextmanager
    def trusted(self) -> Iterator[None]:
        """Let the sandbox itself read traceback frames (audited attribute reads) without a denial."""
        self._trusted = True
        try:
            yield
        finally:
            self._trusted = False

    def deny(self, message: str) -> SandboxViolation:
        """Record a denial (with the program line) and return the exception to raise."""
        was_busy, self._busy = self._busy, True
        try:
            self.denials.append((message, _program_line()))
        finally:
            self._busy = was_busy
        return SandboxViolation(message)

    def _inside_scratch(self, path: Any) -> bool:
        if isinstance(path, int) or path is None:
            return False
        try:
            text = os.fsdecode(path)
        except (TypeError, ValueError):
            return False
        norm = os.path.normpath(os.path.join(self.scratch, text))
        real = os.path.realpath(norm)
        return all(p == self.scratch or p.startswith(self.scratch + os.sep) for p in (norm, real))

    def _allowed(self, event: str, args: tuple[Any, ...]) -> bool:
        if event in _HARMLESS_EVENTS:
            return True
        if event == "open":
            return self._inside_scratch(args[0] if args else None)
        if event == "exec":
            return bool(args) and args[0] is self._program_code
        return event == "object.__getattr__" and self._trusted

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed or self._busy:
            return
        self._busy = True
        try:
            allowed = self._allowed(event, args)
        except Exception:
            allowed = False
        finally:
            self._busy = False
        if not allowed:
            target = f" on {args[0]!r}" if args and isinstance(args[0], (str, bytes, int)) else ""
            raise self.deny(f"the sandbox denied {event!r}{target}")


class Environment:
    """What a program may reach: pre-imported allowed modules (or name-limited proxies) and id sets."""

    def __init__(self) -> None:
        import itertools
        import math
        import random

        import numpy
        import numpy.linalg
        import numpy.random

        from sim import scene

        scene_mod = _proxy("sim.scene", {n: getattr(scene, n) for n in ALLOWED_MODULES["sim.scene"] or ()})
        sim_mod = _proxy("sim", {**_public(scene_mod), "scene": scene_mod})
        typing_mod = _proxy("typing", {n: getattr(__import__("typing"), n) for n in ALLOWED_MODULES["typing"]
                                       or ()})
        future_mod = _proxy("__future__", {"annotations": __import__("__future__").annotations})
        self.modules: dict[str, types.ModuleType] = {
            "numpy": numpy, "numpy.random": numpy.random, "numpy.linalg": numpy.linalg, "math": math,
            "random": random, "itertools": itertools, "typing": typing_mod, "sim": sim_mod,
            "sim.scene": scene_mod, "__future__": future_mod,
        }
        self.scene_type = scene.SceneSpec
        self.allowed_ids = frozenset(id(m) for m in self.modules.values())
        dangerous = {id(getattr(builtins, n)) for n in _DANGEROUS_BUILTINS if hasattr(builtins, n)}
        for name in _DANGEROUS_MODULES:
            mod = sys.modules.get(name)
            for value in vars(mod).values() if mod is not None else ():
                if callable(value):
                    dangerous.add(id(value))
        self.dangerous_ids = frozenset(dangerous)

    def builtins_for(self, policy: AuditPolicy, out: CappedText) -> dict[str, Any]:
        """The builtins dict a program sees: safe names plus guarded getattr/hasattr/type/print/import."""
        table = {n: getattr(builtins, n) for n in _SAFE_BUILTINS}
        guard = self.make_guard(policy)
        missing = object()

        def getattr_(obj: Any, name: str, default: Any = missing) -> Any:
            try:
                return guard(obj, name)
            except AttributeError:
                if default is missing:
                    raise
                return default

        def hasattr_(obj: Any, name: str) -> bool:
            return getattr_(obj, name, missing) is not missing

        def type_(*args: Any) -> type:
            if len(args) != 1:
                raise TypeError("only the one-argument form type(obj) is available in generation programs")
            return type(args[0])

        def print_(*args: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
            sep = " " if sep is None else str(sep)
            out.write(sep.join(map(str, args)) + ("\n" if end is None else str(end)))

        # `open` stays for C code that looks it up in the current frame's builtins (numpy's tofile and
        # fromfile do); the program cannot name it (AST check) and the audit hook confines it to scratch.
        table.update(getattr=getattr_, hasattr=hasattr_, type=type_, print=print_, open=builtins.open,
                     __import__=self.make_importer(), **{GUARD_NAME: guard})
        return table

    def make_guard(self, policy: AuditPolicy) -> Callable[[Any, str], Any]:
        allowed_ids, dangerous_ids = self.allowed_ids, self.dangerous_ids

        def guard(obj: Any, name: str) -> Any:
            if not isinstance(name, str) or not attr_allowed(name):
                raise policy.deny(f"access to attribute {name!r} is not allowed")
            value = getattr(obj, name)
            if isinstance(value, types.ModuleType) and id(value) not in allowed_ids:
                raise policy.deny(f"access to module {value.__name__!r} is not allowed")
            if id(value) in dangerous_ids:
                raise policy.deny(f"access to {name!r} is not allowed")
            return value

        return guard

    def make_importer(self) -> Callable[..., Any]:
        modules, allowed_ids, real_import = self.modules, self.allowed_ids, builtins.__import__

        def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                    level: int = 0) -> types.ModuleType:
            if type(fromlist) is list and not fromlist:
                # C code called by the program (numpy's tofile needs `os`) imports through the current
                # frame's builtins with an empty *list*; import statements pass None or a tuple. Those
                # modules go back to the C caller, not the program; a module not yet loaded still
                # triggers the audited "import" event, which is denied while the program runs.
                return real_import(name, globals, locals, fromlist, level)
            if level != 0 or name not in modules:
                raise ImportRejected(f"import of {name!r} is not allowed")
            mod = modules[name]
            names = ALLOWED_MODULES[name]
            for item in fromlist or ():
                if (names is not None and item not in names) or not attr_allowed(item):
                    raise ImportRejected(f"cannot import {item!r} from {name!r}")
                value = getattr(mod, item, None)
                if isinstance(value, types.ModuleType) and id(value) not in allowed_ids:
                    raise ImportRejected(f"cannot import the module {item!r} from {name!r}")
            return mod if fromlist else modules[name.split(".")[0]]

        return import_


def _proxy(name: str, attrs: dict[str, Any]) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(mod, key, value)
    return mod


def _public(mod: types.ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(mod).items() if not k.startswith("_")}
