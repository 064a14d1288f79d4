"""`SandboxPool`: warm worker processes that run generation programs and return typed results.

The parent never executes program code and never trusts worker output: it reads size-capped frames,
parses JSON, and re-validates every scene with pydantic. A worker that dies, hangs or answers out of
protocol is killed (with its whole process group) and replaced; the task it held is reported.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sandbox.config import PoolConfig, SandboxLimits
from sandbox.policy import check_source
from sandbox.protocol import FrameError, FrameTimeout, read_frame, read_json, write_json
from sandbox.results import ErrorKind, SandboxError, SandboxResult, cut, summarise_validation
from sim.scene import SceneSpec

_ROOT = str(Path(__file__).resolve().parent.parent)
_BOOTSTRAP = f"import sys; sys.path.insert(0, {_ROOT!r}); from sandbox.worker import main; main()"
_HEADER_CAP = 65_536
_FACTORS_CAP = 1_000_000
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class SandboxUnavailable(RuntimeError):
    """Workers cannot be started (a broken installation, not a program error)."""


@dataclass(frozen=True, kw_only=True)
class SandboxTask:
    """One program run for `SandboxPool.run_many`."""

    # Python source defining `generate(rng, **factors)`.
    source: str
    # Keyword arguments for `generate`; must be JSON-serialisable.
    factors: Mapping[str, Any] = field(default_factory=dict)
    # Seed of the `numpy.random.Generator` passed as `rng` (and of the `random` module).
    seed: int = 0
    # Per-task limits; None uses the pool's defaults.
    limits: SandboxLimits | None = None


def _worker_env(scratch_root: str) -> dict[str, str]:
    """A minimal environment: nothing from the caller's environment (no keys, no tokens) reaches a worker."""
    single = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": scratch_root, "TMPDIR": scratch_root,
            **single}


class _Worker:
    """One warm worker process and the two pipes to it."""

    def __init__(self, scratch_root: str, drop_uid: int | None, start_timeout_s: float,
                 os_boundary: bool = True) -> None:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        uid = "none" if drop_uid is None else str(drop_uid)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOTSTRAP, str(to_r), str(from_w), scratch_root, uid,
             "boundary" if os_boundary else "no-boundary"],
            pass_fds=(to_r, from_w), env=_worker_env(scratch_root), cwd=scratch_root,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self.fd_write, self.fd_read = to_w, from_r
        self.ready_by = time.monotonic() + start_timeout_s
        self.info: dict[str, Any] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self) -> dict[str, Any]:
        if self.info is None:
            msg = read_json(self.fd_read, cap=_HEADER_CAP, deadline=self.ready_by)
            if not isinstance(msg, dict) or msg.get("ready") is not True:
                raise FrameError(f"unexpected first message from worker: {str(msg)[:200]}")
            self.info = msg
        return self.info

    def send(self, request: dict[str, Any]) -> None:
        write_json(self.fd_write, request)

    def receive(self, request: dict[str, Any], deadline: float,
                payload_cap: int) -> tuple[dict[str, Any], bytes | None]:
        header = read_json(self.fd_read, cap=_HEADER_CAP, deadline=deadline)
        if not isinstance(header, dict) or header.get("id") != request["id"]:
            raise FrameError("the worker answered out of protocol")
        if not header.get("payload"):
            return header, None
        return header, read_frame(self.fd_read, cap=payload_cap, deadline=deadline)

    def kill(self) -> None:
        for fd in (self.fd_write, self.fd_read):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and any task process it forked
        self.proc.wait()


def _shutdown(workers: list[_Worker], scratch_root: str) -> None:
    for w in list(workers):
        w.kill()
    workers.clear()
    shutil.rmtree(scratch_root, ignore_errors=True)


class SandboxPool:
    """Warm sandbox workers. Use as a context manager; `run` is thread-safe (one task per worker at a time).

    >>> with SandboxPool(PoolConfig(workers=2)) as pool:
    ...     result = pool.run(source, factors={"size": 0.03}, seed=7)
    """

    def __init__(self, config: PoolConfig | None = None) -> None:
        self.config = config or PoolConfig()
        self._workers: list[_Worker] = []
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._scratch_root = ""
        self._closed = True
        self._finalizer: weakref.finalize | None = None

    def __enter__(self) -> SandboxPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> SandboxPool:
        """Start the workers and wait until each has imported numpy and the scene types."""
        if not self._closed:
            return self
        self._scratch_root = tempfile.mkdtemp(prefix="coda-sandbox-")
        if self.config.drop_to_uid is not None and os.geteuid() == 0:
            os.chmod(self._scratch_root, 0o711)  # the dropped uid must reach its own task directory
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._workers, self._scratch_root)
        self._workers.extend(self._spawn() for _ in range(self.config.workers))
        for w in self._workers:
            try:
                w.wait_ready()
            except (FrameError, OSError) as err:
                self.close()
                raise SandboxUnavailable(f"sandbox worker failed to start: {err}") from err
            self._idle.put(w)
        self._check_boundary()
        return self

    def _check_boundary(self) -> None:
        """With os_boundary="require", refuse to run without the Landlock view and the tmpfs scratch."""
        info = self.isolation
        missing = [name for name, ok in (("a Landlock filesystem view (Linux >= 5.13 with Landlock enabled)",
                                          info.get("landlock")),
                                         ("a private size-limited tmpfs scratch (mount namespaces: root or "
                                          "unprivileged user namespaces)", info.get("scratch_quota")))
                   if not ok]
        if missing and self.config.os_boundary == "require":
            self.close()
            raise SandboxUnavailable(
                "the sandbox's kernel boundary is not available here: no " + " and no ".join(missing)
                + ". Generated programs would run behind the Python layers alone, which a hostile program "
                "can defeat. To accept that on this machine, use PoolConfig(os_boundary=\"if_available\").")

    def close(self) -> None:
        """Stop every worker and remove the scratch root."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()

    @property
    def isolation(self) -> dict[str, Any]:
        """What the workers managed to set up: netns, userns, seccomp, drop_privileges, landlock (its ABI, 0
        when absent), scratch_quota, the trees a task may read (+ a note)."""
        with self._lock:
            infos = [w.info for w in self._workers if w.info]
        return dict(infos[0]["isolation"]) if infos else {}

    @property
    def worker_pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._workers]

    def _spawn(self) -> _Worker:
        return _Worker(self._scratch_root, self.config.drop_to_uid, self.config.start_timeout_s,
                       self.config.os_boundary != "off")

    def _replace(self, worker: _Worker) -> _Worker:
        worker.kill()
        fresh = self._spawn()
        with self._lock:
            self._workers[:] = [fresh if w is worker else w for w in self._workers]
        return fresh

    def run(self, source: str, factors: Mapping[str, Any] | None = None, seed: int = 0,
            limits: SandboxLimits | None = None) -> SandboxResult:
        """Run one program: static check here, then `generate(rng, **factors)` in a worker."""
        started = time.monotonic()
        limits = limits or self.config.limits
        error = check_source(source, max_source_bytes=limits.max_source_bytes) if self.config.python_layers \
            else None
        if error is not None:
            return SandboxResult(error=error, duration_s=time.monotonic() - started)
        try:
            encoded = json.dumps(dict(factors or {}))
        except (TypeError, ValueError) as err:
            raise ValueError(f"factors must be a JSON-serialisable mapping: {err}") from None
        if len(encoded) > _FACTORS_CAP:
            raise ValueError(f"factors are larger than {_FACTORS_CAP} bytes of JSON")
        clean = json.loads(encoded)
        request = {"source": source, "factors": clean, "seed": int(seed), "limits": limits.to_dict(),
                   "python_layers": self.config.python_layers}
        if self._closed:
            raise RuntimeError("the sandbox pool is not running; use `with SandboxPool(...)` or start()")
        worker = self._idle.get()
        try:
            worker, result = self._run_on(worker, request, limits)
        finally:
            self._idle.put(worker)
        # the program never sees the scene seed (it gets an rng); stamp it so scenes stay reproducible
        scenes = [sc.model_copy(update={"seed": int(seed)}) for sc in result.scenes]
        return result.model_copy(update={"duration_s": time.monotonic() - started, "scenes": scenes})

    def run_many(self, tasks: Iterable[SandboxTask]) -> list[SandboxResult]:
        """Run tasks concurrently on all workers; results come back in task order. One task's failure —
        anything its program or answer does — is that task's result (`_run_on`, `_to_result`), never the
        batch's: only misuse (bad factors, a closed pool) and a sandbox that cannot start raise."""
        with ThreadPoolExecutor(max_workers=self.config.workers) as ex:
            return list(ex.map(lambda t: self.run(t.source, t.factors, t.seed, t.limits), tasks))

    def _deliver(self, worker: _Worker, request: dict[str, Any]) -> _Worker:
        """Send `request` to a ready worker. A worker found dead (it never saw the task) is replaced once."""
        for attempt in range(2):
            try:
                worker.wait_ready()
                worker.send(request)
                return worker
            except (FrameError, OSError) as err:
                worker = self._replace(worker)
                if attempt:
                    raise SandboxUnavailable(f"sandbox workers fail to start or accept tasks: {err}") from err
        raise AssertionError("unreachable")

    def _run_on(self, worker: _Worker, request: dict[str, Any],
                limits: SandboxLimits) -> tuple[_Worker, SandboxResult]:
        request = {**request, "id": next(self._ids)}
        worker = self._deliver(worker, request)
        deadline = time.monotonic() + limits.wall_s + self.config.grace_s
        payload_cap = limits.max_result_bytes + 4 * limits.max_output_chars + 65_536
        try:
            header, payload = worker.receive(request, deadline, payload_cap)
        except FrameTimeout:
            worker = self._replace(worker)
            message = f"wall-clock limit of {limits.wall_s:g} s exceeded (the worker stopped responding)"
            return worker, SandboxResult.failure("timeout", message)
        except (FrameError, OSError) as err:
            worker = self._replace(worker)
            return worker, SandboxResult.failure("crashed", f"the sandbox worker died or misbehaved ({err}); "
                                                 "it was replaced")
        return worker, _to_result(header, payload, limits)


def _scrub(obj: Any) -> Any:
    """Replace lone surrogates in every string of a parsed JSON value."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "replace").decode("utf-8")
    if isinstance(obj, list):
        return [_scrub(x) for x in obj]
    if isinstance(obj, dict):
        return {_scrub(k): _scrub(v) for k, v in obj.items()}
    return obj


class _NonFinite(ValueError):
    pass


def _non_finite(name: str) -> float:
    raise _NonFinite(f"non-finite number {name} in the result (NaN and Infinity are refused)")


class _Unreadable(ValueError):
    """The task's answer cannot be read: the result this becomes."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _answer(payload: bytes | None) -> dict[str, Any]:
    """The task's own answer, parsed with NaN/Infinity refused; {} when it sent none."""
    if payload is None:
        return {}
    try:
        data = json.loads(payload, parse_constant=_non_finite)
        if not isinstance(data, dict):
            raise ValueError("the answer is not a JSON object")
        return _scrub(data) if _SURROGATE.search(payload) else data  # text that cannot be written as UTF-8
    except RecursionError:
        raise _Unreadable("invalid_output", "the result is nested too deeply to read") from None
    except _NonFinite as err:
        raise _Unreadable("invalid_output", f"malformed answer from the sandbox worker: {err}") from None
    except (ValueError, TypeError) as err:
        raise _Unreadable("crashed", f"malformed answer from the sandbox worker: "
                          f"{str(err)[:300] or type(err).__name__}") from None


def _error(raw: Any, stdout: str, where: str) -> SandboxResult:
    """An error the worker (its verdict) or the task (its own answer) reported; every text is cut to the
    bounds of `SandboxError`."""
    try:
        if not isinstance(raw, dict):
            raise TypeError(f"the error is a {type(raw).__name__}, not an object")
        fields = {k: raw[k] for k in ("kind", "message", "line", "traceback") if raw.get(k) is not None}
        fields.setdefault("traceback", fields.get("message", ""))
        return SandboxResult(error=SandboxError.model_validate(fields), stdout=stdout)
    except ValidationError as err:
        message = f"malformed error from the {where}: {summarise_validation(err)}"
        return SandboxResult.failure("crashed", message, stdout=stdout)
    except TypeError as err:
        return SandboxResult.failure("crashed", f"malformed error from the {where}: {err}", stdout=stdout)


def _to_result(header: dict[str, Any], payload: bytes | None, limits: SandboxLimits) -> SandboxResult:
    """Turn a worker header + task payload into a validated `SandboxResult`. With an error in the header
    (the worker's verdict), the payload only lends the program's output."""
    verdict = header.get("error")
    try:
        data = _answer(payload)
    except _Unreadable as err:
        if verdict:
            return _error(verdict, "", "sandbox worker")
        return SandboxResult.failure(err.kind, str(err))
    stdout = str(data.get("stdout", ""))[: limits.max_output_chars + 200]
    if verdict:
        return _error(verdict, stdout, "sandbox worker")
    if data.get("ok") is not True:
        return _error(data.get("error"), stdout, "task process")
    try:
        raw = data.get("scenes", [])
        if not isinstance(raw, list):
            raise TypeError("scenes must be a list")
        scenes = [SceneSpec.model_validate(s) for s in raw]
    except ValidationError as err:
        return SandboxResult.failure("invalid_output", f"generate() returned an invalid scene: "
                                     f"{summarise_validation(err)}", stdout=stdout)
    except (TypeError, RecursionError) as err:
        return SandboxResult.failure("invalid_output", f"generate() returned an invalid scene: "
                                     f"{cut(str(err), 300)}", stdout=stdout)
    if not scenes:
        return SandboxResult.failure("invalid_output", "generate() returned no scenes", stdout=stdout)
    return SandboxResult(scenes=scenes, stdout=stdout)
