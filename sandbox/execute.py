"""Run one generation program inside an (already isolated) task process; return the JSON payload bytes.

The payload is `{"ok": true, "stdout": ..., "scenes": [...]}` or `{"ok": false, "stdout": ...,
"error": {kind, message, line, traceback}}`. Tracebacks keep only the program's own frames, with its
own line numbers (the code is compiled with filename "<program>").
"""

from __future__ import annotations

import builtins
import json
import math
import random
import signal
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from sandbox.config import SandboxLimits
from sandbox.policy import ENTRY_POINT, PROGRAM_FILENAME, find_violations, guard_tree, violations_to_error
from sandbox.results import ErrorKind
from sandbox.runtime import AuditPolicy, CappedText, Environment, ImportRejected, SandboxViolation

_MAX_MESSAGE = 1500
_MAX_FRAMES = 6


class TimeLimitExceeded(BaseException):
    """Raised in the program by SIGXCPU (CPU soft limit) or SIGALRM (wall clock), so the report has a line."""


def _arm_time_limits(limits: SandboxLimits, hits: list[str]) -> None:
    """SIGXCPU/SIGALRM raise inside the program; the hard CPU limit and the worker's kill stay as backstops
    for code stuck in C or a program that swallows the exception (`hits` makes the timeout sticky)."""

    def on_limit(signum: int, _frame: Any) -> None:
        cpu = signum == signal.SIGXCPU
        hits.append(f"CPU time limit of {math.ceil(limits.cpu_s)} s exceeded" if cpu
                    else f"wall-clock limit of {limits.wall_s:g} s exceeded")
        raise TimeLimitExceeded(hits[-1])

    signal.signal(signal.SIGXCPU, on_limit)
    signal.signal(signal.SIGALRM, on_limit)
    signal.setitimer(signal.ITIMER_REAL, limits.wall_s)


def _error(kind: ErrorKind, message: str, line: int | None = None, traceback: str = "") -> dict[str, Any]:
    return {"kind": kind, "message": message[:_MAX_MESSAGE], "line": line,
            "traceback": (traceback or message)[: 4 * _MAX_MESSAGE]}


def _payload(out: CappedText, error: dict[str, Any]) -> bytes:
    return json.dumps({"ok": False, "stdout": out.getvalue(), "error": error}).encode()


def _source_line(lines: list[str], n: int | None) -> str:
    return lines[n - 1].strip() if n and 0 < n <= len(lines) else ""


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # a program-defined __str__ may itself fail
        text = "<unprintable>"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def _program_frames(exc: BaseException, policy: AuditPolicy) -> list[tuple[int, str]]:
    frames: list[tuple[int, str]] = []
    tb = exc.__traceback__
    with policy.trusted():  # tb_frame / f_code reads are audited events
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename == PROGRAM_FILENAME:
                frames.append((tb.tb_lineno, code.co_name))
            tb = tb.tb_next
    return frames


def _format(frames: list[tuple[int, str]], lines: list[str], message: str) -> str:
    parts = ["Traceback (program lines, most recent call last):"] if frames else []
    if len(frames) > _MAX_FRAMES:
        parts.append(f"  ... {len(frames) - _MAX_FRAMES} earlier frames")
    for line, fn in frames[-_MAX_FRAMES:]:
        parts.append(f"  line {line}, in {fn}")
        if src := _source_line(lines, line):
            parts.append(f"    {src}")
    return "\n".join([*parts, message])


def _from_exception(exc: BaseException, lines: list[str], policy: AuditPolicy,
                    limits: SandboxLimits) -> dict[str, Any]:
    frames = _program_frames(exc, policy)
    line = frames[-1][0] if frames else None
    message = _describe(exc)
    kind: ErrorKind = "runtime"
    if isinstance(exc, SandboxViolation):
        kind = "forbidden"
    elif isinstance(exc, TimeLimitExceeded):
        kind, message = "timeout", str(exc)
    elif isinstance(exc, ImportRejected):
        kind = "rejected_import"
    elif isinstance(exc, MemoryError):
        kind = "memory"
        message = f"MemoryError: the program exceeded the memory limit ({limits.memory_mb} MiB)"
    return _error(kind, message, line, _format(frames, lines, message))


def _denial(policy: AuditPolicy, lines: list[str]) -> dict[str, Any]:
    message, line = policy.denials[0]
    where = f"line {line}\n    {_source_line(lines, line)}\n" if line else ""
    extra = f" (and {len(policy.denials) - 1} more denied operations)" if len(policy.denials) > 1 else ""
    return _error("forbidden", message + extra, line, f"{where}forbidden: {message}{extra}")


def _as_scenes(value: Any, scene_type: type) -> tuple[list[Any], str]:
    items = list(value) if type(value) in (list, tuple) else [value]
    if not items:
        return [], "generate() returned an empty list; return a SceneSpec or a non-empty list of them"
    for i, item in enumerate(items):
        if type(item) is not scene_type:
            at = f" at index {i}" if len(items) > 1 else ""
            return [], f"generate() must return a SceneSpec or a list of them, got {type(item).__name__}{at}"
    return items, ""


def _ok_payload(scenes: list[Any], out: CappedText, limits: SandboxLimits,
                serialize: Callable[[Any], bytes]) -> bytes | dict[str, Any]:
    parts, size = [], 0
    for scene in scenes:
        try:
            text = serialize(scene).decode("utf-8")
        except Exception as err:  # e.g. lone surrogates in a string field
            return _error("invalid_output", f"a returned scene cannot be serialised: {_describe(err)}")
        size += len(text) + 1
        if size > limits.max_result_bytes:
            return _error("output_too_large", f"the result exceeds {limits.max_result_bytes} bytes "
                          f"(after {len(parts)} of {len(scenes)} scenes); return fewer or smaller scenes")
        parts.append(text)
    head = json.dumps({"ok": True, "stdout": out.getvalue()})[:-1]
    return f'{head},"scenes":[{",".join(parts)}]}}'.encode()


def run_program(env: Environment, source: str, factors: dict[str, Any], seed: int, limits: SandboxLimits,
                policy: AuditPolicy, *, time_limits: bool = True, python_layers: bool = True) -> bytes:
    """Check, compile and run `source`, call `generate(rng, **factors)`, and serialise the outcome.

    `time_limits=False` (the worker's own warm-up) skips the SIGXCPU/SIGALRM handlers. `python_layers=False`
    (`PoolConfig.python_layers`, tests of the OS boundary only) runs the source unchecked with the real
    builtins."""
    out = CappedText(limits.max_output_chars)
    lines = source.splitlines()
    if python_layers:
        tree, found = find_violations(source, max_source_bytes=limits.max_source_bytes)
        if found or tree is None:
            return _payload(out, violations_to_error(source, found).model_dump())
    try:
        code = compile(guard_tree(tree), PROGRAM_FILENAME, "exec", dont_inherit=True) if python_layers \
            else compile(source, PROGRAM_FILENAME, "exec", dont_inherit=True)
    except RecursionError:
        return _payload(out, _error("rejected_code", "the program is nested too deeply"))
    except (SyntaxError, ValueError) as err:
        line = getattr(err, "lineno", None)
        message = f"SyntaxError: {getattr(err, 'msg', err)}"
        where = f"line {line}\n    {_source_line(lines, line)}\n" if line else ""
        return _payload(out, _error("syntax", message, line, where + message))
    table = env.builtins_for(policy, out) if python_layers else \
        {**builtins.__dict__, "print": lambda *a, **k: print(*a, **{**k, "file": out})}
    namespace: dict[str, Any] = {"__builtins__": table, "__name__": PROGRAM_FILENAME}
    rng = np.random.default_rng(seed)
    random.seed(seed)
    reserve: bytearray | None = bytearray(1 << 21)  # freed on MemoryError so reporting has room
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out  # type: ignore[assignment]
    hits: list[str] = []
    if time_limits:
        _arm_time_limits(limits, hits)
    policy.arm(code, namespace)
    result: bytes | dict[str, Any]
    try:
        exec(code, namespace)
        entry = namespace.get(ENTRY_POINT)
        if not callable(entry):
            result = _error("invalid_output", f"`{ENTRY_POINT}` is not a function after the program ran")
        else:
            scenes, problem = _as_scenes(entry(rng, **factors), env.scene_type)
            result = _error("invalid_output", problem) if problem else _ok_payload(scenes, out, limits,
                                                                                  env.serialize)
    except BaseException as exc:
        reserve = None
        result = _from_exception(exc, lines, policy, limits)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stderr = saved
    del reserve
    if policy.denials:
        result = _denial(policy, lines)
    elif hits and not (isinstance(result, dict) and result["kind"] == "timeout"):  # swallowed by the program
        result = _error("timeout", hits[0], result.get("line") if isinstance(result, dict) else None)
    return result if isinstance(result, bytes) else _payload(out, result)
