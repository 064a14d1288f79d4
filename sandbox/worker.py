"""The warm worker process: imports numpy and the scene types once, then forks one task process per
program, so every program starts from the same clean, warm state and nothing it does outlives it.

Started by `SandboxPool` as `python -I -c <bootstrap> FD_IN FD_OUT SCRATCH_ROOT DROP_UID BOUNDARY` (BOUNDARY:
"boundary" or "no-boundary", whether to set up `sandbox.fsview` in task processes) with a minimal
environment. Protocol (length-prefixed JSON, see `sandbox.protocol`): the worker sends `{"ready": ...}`,
then for each request `{"id", "source", "factors", "seed", "limits"}` it answers with a header
`{"id", "error": null | {kind, message}, "payload": bool, "cpu_s", "maxrss_mb"}`, followed by the task
process's own payload frame when `payload` is true. The parent re-validates everything.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from typing import Any, NoReturn

from sandbox import fsview, isolation
from sandbox.config import SandboxLimits
from sandbox.protocol import (
    FrameError,
    FrameTimeout,
    FrameTooLarge,
    read_frame,
    read_json,
    write_frame,
    write_json,
)

REQUEST_CAP = 16_000_000

_WARMUP = '''
import math
import numpy as np
from sim.scene import FixtureSpec, ObjectSpec, Predicate, SceneSpec

def generate(rng, **factors):
    xy = rng.uniform(-0.1, 0.1, size=2) + rng.normal(0.0, 0.01, size=2)
    k = int(rng.integers(0, 3)) + int(rng.choice([0, 1])) + len(rng.permutation(3))
    yaw = float(np.linalg.norm(xy)) * math.pi + float(np.clip(np.mean(xy), -1, 1))
    try:
        ObjectSpec(name="Bad", kind="box", category="cube", size=(0.02, 0.02, 0.02))
    except ValueError as err:
        print(str(err)[:10])
    cube = ObjectSpec(name="cube", kind="box", category="cube", size=(0.02, 0.02, 0.02),
                      pos=(float(xy[0]), float(xy[1])), yaw=yaw, rgba=(0.1, 0.2, 0.3, 1.0))
    bin_ = FixtureSpec(name="bin", kind="bin", pos=(0.1, 0.2))
    scene = SceneSpec(family="warmup", instruction=f"put the cube in the bin {k}", objects=(cube,),
                      fixtures=(bin_,), goal=(Predicate(fn="inside", args=("cube", "bin")),), seed=k)
    return [scene, scene.model_copy(update={"seed": 1})]
'''
_WARMUP_FAIL = "def generate(rng, **factors):\n    return [1 / 0]\n"


def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    """Warnings go to the captured output without reading source files (which the audit hook denies)."""
    where = f" (line {lineno})" if filename == "<program>" else ""
    sys.stderr.write(f"{category.__name__}: {message}{where}\n")


def _load(scratch_root: str) -> Any:
    """Import everything a program may touch and run the warm-up programs, before any fork."""
    from sandbox.execute import run_program
    from sandbox.runtime import AuditPolicy, Environment

    warnings.showwarning = _show_warning
    env = Environment()
    for source in (_WARMUP, _WARMUP_FAIL):  # trusted code, run here without the hook installed
        run_program(env, source, {"a": 1}, 0, SandboxLimits(), AuditPolicy(scratch_root), time_limits=False)
    return env


def _probe_seccomp() -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if isolation.install_seccomp() else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _enter_view(limits: SandboxLimits, scratch: str, drop_uid: int | None, boundary: dict[str, Any],
                read: tuple[str, ...]) -> None:
    """The kernel boundary of a task process, in order: a private size-limited tmpfs scratch (needs the
    worker's privileges), rlimits, the uid drop, the Landlock view, then seccomp. A part the worker's probe
    found working must work here too (else the task does not run)."""
    if boundary["scratch_quota"]:
        fsview.mount_scratch(scratch, max_bytes=limits.max_scratch_bytes, max_files=limits.max_scratch_files,
                             uid=drop_uid)
    os.chdir(scratch)
    isolation.apply_limits(limits)
    isolation.drop_privileges(drop_uid)
    if boundary["landlock"]:
        fsview.restrict(fsview.View(read=read, scratch=scratch))
    isolation.install_seccomp()


def _task_process(request: dict[str, Any], limits: SandboxLimits, scratch: str, wfd: int, report_fd: int,
                  drop_uid: int | None, env: Any, boundary: dict[str, Any],
                  read: tuple[str, ...]) -> NoReturn:
    from sandbox.execute import TimeLimitExceeded, run_program
    from sandbox.runtime import AuditPolicy

    try:
        keep = sorted((wfd, report_fd))
        os.closerange(3, keep[0])  # the parent's pipes must be out of reach
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 16)
        os.set_blocking(report_fd, False)  # a flood of denials must never block the task on a full pipe
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        _enter_view(limits, scratch, drop_uid, boundary, read)
        layers = request.get("python_layers", True) is not False
        policy = AuditPolicy(scratch, report_fd=report_fd)
        if layers:
            sys.addaudithook(policy)
        payload = run_program(env, str(request["source"]), dict(request.get("factors") or {}),
                              int(request.get("seed", 0)), limits, policy, python_layers=layers)
    except BaseException as err:  # a failure of the sandbox itself, not of the program
        error = {"kind": "crashed", "message": f"sandbox setup failed: {type(err).__name__}: {err}",
                 "line": None, "traceback": ""}
        if isinstance(err, TimeLimitExceeded):  # the limit fired while the sandbox was reporting
            error.update(kind="timeout", message=str(err))
        payload = json.dumps({"ok": False, "stdout": "", "error": error}).encode()
    try:
        write_frame(wfd, payload)
    finally:
        os._exit(0)


def _classify_death(status: int, cpu_s: float, limits: SandboxLimits) -> dict[str, str]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= math.ceil(limits.cpu_s)):
            return {"kind": "timeout", "message": f"CPU time limit of {math.ceil(limits.cpu_s)} s exceeded"}
        if sig == signal.SIGSYS:
            return {"kind": "forbidden", "message": "the program made a forbidden system call"}
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        note = " (possibly out of memory)" if sig == signal.SIGKILL else ""
        return {"kind": "crashed", "message": f"the task process died from {name}{note}"}
    code = os.waitstatus_to_exitcode(status)
    return {"kind": "crashed", "message": f"the task process exited with status {code} without a result"}


def _denials(fd: int) -> list[str]:
    """What the task's audit hook reported as it happened (read after the task has exited)."""
    data = b""
    try:
        while len(data) < 65_536 and (chunk := os.read(fd, 65_536)):
            data += chunk
    finally:
        os.close(fd)
    return [line.split("\t", 1)[-1] for line in data.decode("utf-8", "replace").splitlines() if line]


def _collect(pid: int, rfd: int, limits: SandboxLimits,
             started: float) -> tuple[dict[str, Any], bytes | None]:
    cap = limits.max_result_bytes + 4 * limits.max_output_chars + 65_536
    payload, error = None, None
    try:
        # The task's own SIGALRM fires at wall_s and reports the line; this kill is the backstop.
        payload = read_frame(rfd, cap=cap, deadline=started + limits.wall_s + 1.0)
    except FrameTimeout:
        os.kill(pid, signal.SIGKILL)
        error = {"kind": "timeout", "message": f"wall-clock limit of {limits.wall_s:g} s exceeded"}
    except FrameTooLarge:
        os.kill(pid, signal.SIGKILL)
        error = {"kind": "output_too_large", "message": f"the result exceeds {cap} bytes"}
    except FrameError:
        pass
    finally:
        os.close(rfd)
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    if error is None and payload is not None and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        payload = None  # a result counts only from a task process that then exited cleanly
    if payload is None and error is None:
        error = _classify_death(status, cpu, limits)
    header = {"error": error, "payload": payload is not None, "cpu_s": round(cpu, 4),
              "maxrss_mb": round(usage.ru_maxrss / 1024, 1)}
    return header, payload


def _probe_boundary(scratch_root: str, drop_uid: int | None, read: tuple[str, ...]) -> dict[str, Any]:
    """Which parts of the kernel boundary work here, tried in a throwaway child: the tmpfs scratch, then
    Landlock (its ABI, 0 if absent) — and that the view really hides a file outside it."""
    abi = fsview.landlock_abi()
    probe = tempfile.mkdtemp(prefix="probe-", dir=scratch_root)
    if drop_uid is not None and os.geteuid() == 0:
        os.chown(probe, drop_uid, drop_uid)
    fd, outside = tempfile.mkstemp(prefix="outside-", dir=scratch_root)  # one per worker
    os.close(fd)
    os.chmod(outside, 0o644)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        quota = landlock = False
        try:
            fsview.mount_scratch(probe, max_bytes=65536, max_files=8, uid=drop_uid)
            quota = True
        except OSError:
            pass
        try:
            isolation.drop_privileges(drop_uid)
            if abi:
                fsview.restrict(fsview.View(read=read, scratch=probe))
                try:
                    open(outside).close()
                except PermissionError:
                    landlock = True
        except OSError:
            pass
        os.write(wfd, bytes([int(quota), int(landlock)]))
        os._exit(0)
    os.close(wfd)
    got = os.read(rfd, 2)
    os.close(rfd)
    os.waitpid(pid, 0)
    shutil.rmtree(probe, ignore_errors=True)
    os.unlink(outside)
    quota, landlock = (bool(got[0]), bool(got[1])) if len(got) == 2 else (False, False)
    return {"scratch_quota": quota, "landlock": abi if landlock else 0}


def _serve(request: dict[str, Any], fd_out: int, scratch_root: str, drop_uid: int | None, env: Any,
           boundary: dict[str, Any], read: tuple[str, ...]) -> None:
    limits = SandboxLimits(**request["limits"])
    scratch = tempfile.mkdtemp(prefix="task-", dir=scratch_root)
    if drop_uid is not None and os.geteuid() == 0:
        os.chown(scratch, drop_uid, drop_uid)
    rfd, wfd = os.pipe()
    report_r, report_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        os.close(report_r)
        _task_process(request, limits, scratch, wfd, report_w, drop_uid, env, boundary, read)
    os.close(wfd)
    os.close(report_w)
    try:
        header, payload = _collect(pid, rfd, limits, started)
        denied = _denials(report_r)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if denied and (header["error"] or {}).get("kind") != "forbidden":
        # decided here, outside the task: whatever the task's own frame says, a denial makes it forbidden
        more = f" (and {len(denied) - 1} more denied operations)" if len(denied) > 1 else ""
        header = {**header, "error": {"kind": "forbidden", "message": denied[0] + more}, "payload": False}
        payload = None
    write_json(fd_out, {"id": request.get("id"), **header})
    if payload is not None:
        write_frame(fd_out, payload)


def main(argv: list[str] | None = None) -> None:
    """Worker entry point (see the module docstring for the arguments and protocol)."""
    args = sys.argv[1:] if argv is None else argv
    fd_in, fd_out, scratch_root = int(args[0]), int(args[1]), args[2]
    drop_uid = None if args[3] == "none" else int(args[3])
    namespaces = isolation.enter_namespaces()  # first: a user namespace needs a single-threaded process
    env = _load(scratch_root)
    read = fsview.import_roots()  # the code the tasks run on, all imported by now
    wanted = len(args) < 5 or args[4] != "no-boundary"
    boundary = _probe_boundary(scratch_root, drop_uid, read) if wanted else {"scratch_quota": False,
                                                                             "landlock": 0}
    info = {**namespaces, "seccomp": _probe_seccomp(),
            "drop_privileges": drop_uid is not None and os.geteuid() == 0, **boundary,
            "readable": list(read)}
    write_json(fd_out, {"ready": True, "pid": os.getpid(), "isolation": info})
    while True:
        try:
            request = read_json(fd_in, cap=REQUEST_CAP)
        except FrameError:  # the parent closed the pipe: shut down
            return
        try:
            _serve(request, fd_out, scratch_root, drop_uid, env, boundary, read)
        except Exception as err:  # report and stay alive; the parent decides whether to replace us
            error = {"kind": "crashed", "message": f"sandbox worker error: {type(err).__name__}: {err}"}
            write_json(fd_out, {"id": request.get("id"), "error": error, "payload": False})
