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

from sandbox.policy import ALLOWED_MODULES, GUARD_NAME, attr_allowed


class SandboxViolation(BaseException):
    """Raised by the guard or the audit hook. A BaseException, so `except Exception` does not hide it."""


class ImportRejected(ImportError):
    """An import outside the allowlist (an ImportError, so `try: import x except ImportError` works)."""


# Events that are harmless while the program runs (everything not listed, and not checked below, is denied).
# "compile" only builds code (np.load parses .npy headers with ast.literal_eval); running code is the
# "exec" event, allowed for the program's own module code only.
_HARMLESS_EVENTS = frozenset({"builtins.id", "time.sleep", "array.__new__", "compile"})
# What the hook's own work raises (the frame walk of `_program_line`); allowed while the hook runs. The walk
# reads only unaudited frame attributes (`f_globals`, `f_lineno`, `f_back`): `f_code` raises
# "object.__getattr__" on Python 3.11+, which the hook must go on denying to program code.
_HOOK_OWN_EVENTS = frozenset({"sys._getframe"})
# What a denial of these events says beyond naming them: what an honest program should do instead.
_HINTS = {
    "open": "a program may open files only inside its scratch directory, its working directory (use a "
            "relative path such as 'layout.npy')",
    "import": "a program may import only the allowed modules, at the top of the program",
}
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


def _program_line(program_globals: Any) -> int | None:
    """The innermost line of the program on the current stack: a frame whose globals are the program's
    namespace (its module code and every function it defined)."""
    if program_globals is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is program_globals:
            return frame.f_lineno
        frame = frame.f_back
    return None


class AuditPolicy:
    """The audit hook for one task process: scratch-only files, no imports, no escapes."""

    def __init__(self, scratch: str, report_fd: int | None = None) -> None:
        self.scratch = os.path.realpath(scratch)
        # every denial is also written here at once (a pipe the worker reads after the task ends): a program
        # that later wins inside the process can add to that record, never take a denial back
        self.report_fd = report_fd
        self.armed = False
        self.denials: list[tuple[str, int | None]] = []
        self._program_code: Any = None
        self._program_globals: Any = None
        self._trusted = False
        self._busy = False

    def arm(self, program_code: Any, program_globals: dict[str, Any] | None = None) -> None:
        """Start denying: `program_code` is the one code object that may be executed, `program_globals`
        the namespace it runs in (how a denial finds the program's line)."""
        self._program_code, self._program_globals, self.armed = program_code, program_globals, True

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
            self._record(message, _program_line(self._program_globals))
        finally:
            self._busy = was_busy
        return SandboxViolation(message)

    def _record(self, message: str, line: int | None) -> None:
        self.denials.append((message, line))
        if self.report_fd is not None:
            with contextlib.suppress(OSError):
                os.write(self.report_fd, (f"{line or 0}\t{message[:500]}\n").encode("utf-8", "replace"))

    def _inside_scratch(self, path: Any) -> bool:
        # exact str or bytes only: a subclass's `decode`, `startswith` or `__fspath__` is program code
        if type(path) is str:
            text = path
        elif type(path) is bytes:
            try:
                text = bytes.decode(path, "utf-8", "surrogateescape")
            except UnicodeError:
                return False
        else:
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
        if not self.armed:
            return
        if self._busy:
            # An event raised while the hook itself runs. The hook's own work raises only the frame reads
            # of `_program_line`; anything else is program code that got to run inside the check (a
            # garbage-collected generator's `finally`, a `__del__`): denied, never waved through.
            if event in _HOOK_OWN_EVENTS:
                return
            self._record(f"the sandbox denied {event!r} (raised while the sandbox checked another operation)",
                         None)
            raise SandboxViolation(f"the sandbox denied {event!r}")
        self._busy = True
        try:
            allowed = self._allowed(event, args)
        except Exception:
            allowed = False
        finally:
            self._busy = False
        if not allowed:
            shown = _shown_arg(args[0]) if args else ""
            target = f" on {shown}" if shown else ""
            hint = f": {_HINTS[event]}" if event in _HINTS else ""
            raise self.deny(f"the sandbox denied {event!r}{target}{hint}")


class Environment:
    """What a program may reach: pre-imported allowed modules (or name-limited proxies) and id sets."""

    def __init__(self) -> None:
        import itertools
        import math
        import random

        import numpy
        import numpy.linalg
        import numpy.random

        from sim import extension, scene

        scene_mod = _proxy("sim.scene", {n: getattr(scene, n) for n in ALLOWED_MODULES["sim.scene"] or ()})
        extension_mod = _proxy("sim.extension", {n: getattr(extension, n)
                                                 for n in ALLOWED_MODULES["sim.extension"] or ()})
        sim_mod = _proxy("sim", {**_public(scene_mod), "scene": scene_mod})
        typing_mod = _proxy("typing", {n: getattr(__import__("typing"), n) for n in ALLOWED_MODULES["typing"]
                                       or ()})
        future_mod = _proxy("__future__", {"annotations": __import__("__future__").annotations})
        self.modules: dict[str, types.ModuleType] = {
            "numpy": numpy, "numpy.random": numpy.random, "numpy.linalg": numpy.linalg, "math": math,
            "random": random, "itertools": itertools, "typing": typing_mod, "sim": sim_mod,
            "sim.scene": scene_mod, "sim.extension": extension_mod, "__future__": future_mod,
        }
        self.scene_type = scene.SceneSpec
        # captured before any program runs: a program that patches `SceneSpec.model_dump_json` (through an
        # alias the static check cannot see) changes nothing about how its scenes are written out
        self.serialize: Callable[[Any], bytes] = scene.SceneSpec.__pydantic_serializer__.to_json
        self.allowed_ids = frozenset(id(m) for m in self.modules.values())
        dangerous = {id(getattr(builtins, n)) for n in _DANGEROUS_BUILTINS if hasattr(builtins, n)}
        for name in _DANGEROUS_MODULES:
            mod = sys.modules.get(name)
            for value in vars(mod).values() if mod is not None else ():
                if callable(value):
                    dangerous.add(id(value))
        self.dangerous_ids = frozenset(dangerous)
        # array types whose constructors take a raw buffer: an object dtype over a bytearray is arbitrary
        # memory access. Programs get a checked stand-in (isinstance and `type(a) is np.ndarray` still work).
        self.checked_types: dict[type, type] = {numpy.ndarray: _no_buffer(numpy.ndarray, "buffer", 2),
                                                numpy.recarray: _no_buffer(numpy.recarray, "buf", 3)}

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

        checked = self.checked_types

        def type_(*args: Any) -> type:
            if len(args) != 1:
                raise TypeError("only the one-argument form type(obj) is available in generation programs")
            t = type(args[0])
            if issubclass(t, type):  # a metatype (`type(type(0))` is `type`) defines classes at will
                raise TypeError("type() of a class is not available in generation programs; compare "
                                "classes directly")
            return checked.get(t, t)

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

        checked = self.checked_types
        ndarray = self.modules["numpy"].ndarray

        def guard(obj: Any, name: str) -> Any:
            if type(name) is not str or not attr_allowed(name):
                raise policy.deny(f"access to attribute {_shown(name)} is not allowed")
            if name == "resize" and isinstance(obj, ndarray):  # resize(refcheck=False) frees live memory
                raise policy.deny("ndarray.resize is not allowed; use numpy.resize(a, shape)")
            value = getattr(obj, name)
            if isinstance(value, types.ModuleType) and id(value) not in allowed_ids:
                raise policy.deny(f"access to module {value.__name__!r} is not allowed")
            if id(value) in dangerous_ids:
                raise policy.deny(f"access to {name!r} is not allowed")
            if type(value) is type and value in checked:
                return checked[value]
            return value

        return guard

    def make_importer(self) -> Callable[..., Any]:
        modules, allowed_ids, real_import = self.modules, self.allowed_ids, builtins.__import__
        checked = self.checked_types

        def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                    level: int = 0) -> types.ModuleType:
            if type(fromlist) is list and not fromlist:
                # C code called by the program (numpy's tofile needs `os`) imports through the current
                # frame's builtins with an empty *list*; import statements pass None or a tuple. Those
                # modules go back to the C caller, not the program; a module not yet loaded still
                # triggers the audited "import" event, which is denied while the program runs.
                return real_import(name, globals, locals, fromlist, level)
            if type(name) is not str or level != 0 or name not in modules:
                raise ImportRejected(f"import of {_shown(name)} is not allowed")
            mod = modules[name]
            names = ALLOWED_MODULES[name]
            items = tuple(fromlist or ())
            for item in items:
                if type(item) is not str or (names is not None and item not in names) or not attr_allowed(
                        item):
                    raise ImportRejected(f"cannot import {_shown(item)} from {name!r}")
                value = getattr(mod, item, None)
                if isinstance(value, types.ModuleType) and id(value) not in allowed_ids:
                    raise ImportRejected(f"cannot import the module {item!r} from {name!r}")
                if type(value) is type and value in checked:
                    raise ImportRejected(f"`from {name} import {item}` is not available; use "
                                         f"`import {name}` and `{name}.{item}`")
            return mod if items else modules[name.split(".")[0]]

        return import_


def _shown_arg(arg: Any) -> str:
    """An event's first argument for a message, when it is a plain path, name or number (no program code
    runs: exact types only), at most 200 characters."""
    if type(arg) in (str, bytes, int):
        text = repr(arg)
        return text if len(text) <= 200 else text[:200] + "…"
    return ""


def _shown(name: Any) -> str:
    """A name for a message without running program code (no subclass `__str__`/`__repr__`)."""
    return str.__repr__(name) if isinstance(name, str) else f"<{type(name).__name__}>"


def _no_buffer(real: type, keyword: str, position: int) -> type:
    """A stand-in class for `real` that constructs real instances, but never over a caller's buffer."""

    class _Checked(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: Any) -> bool:
            return sub is cls or (isinstance(sub, type) and issubclass(sub, real))

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get(keyword) is not None or len(args) > position:
                raise TypeError(f"numpy.{real.__name__}(..., {keyword}=...) is not available in generation "
                                "programs; use numpy.array, numpy.zeros or numpy.empty")
            return real(*args, **kwargs)

    return _Checked(real.__name__, (), {"__module__": "numpy", "__doc__": real.__doc__})


def _proxy(name: str, attrs: dict[str, Any]) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(mod, key, value)
    return mod


def _public(mod: types.ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(mod).items() if not k.startswith("_")}
