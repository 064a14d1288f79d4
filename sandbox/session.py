"""One request, from reading it to answering it, in a throwaway fork of the warm worker (the session).

The warm worker forks a session before the request is read, so the worker itself never holds a request
(a program's text, its factor values) or a result, and the next task, forked from a later session, cannot
find them in the memory it inherits. The session reads the request, makes the task's own namespaces
(`isolation.enter_task_namespaces`), forks the task process, collects its answer with a deadline, kills
what is left, writes the verdict to the pool, and exits.

The task process sets up its boundary in order — a private tmpfs scratch (it needs the worker's
privileges), rlimits, the uid drop, the Landlock view, then seccomp — and runs the program.
"""

from __future__ import annotations

import json
import math
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, NoReturn

from sandbox import fsview, isolation, seccomp
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
EXIT_PIPE_CLOSED = 3  # a session's exit status when the pool closed the request pipe: the worker stops
_DENIAL_CHARS = 500  # a denial as the task's audit hook reported it (the task can write anything there)


@dataclass(frozen=True)
class WorkerState:
    """What every session inherits from its warm worker: its probes, and what tasks run on."""

    scratch_root: str
    drop_uid: int | None
    env: Any  # sandbox.runtime.Environment
    boundary: dict[str, Any]  # scratch_quota, landlock (the probe's findings)
    read: tuple[str, ...]  # the trees a task may read
    task_namespaces: frozenset[str]  # keys of isolation.TASK_NAMESPACES that work here


def _enter_view(limits: SandboxLimits, scratch: str, state: WorkerState) -> None:
    """The kernel boundary of a task process. A part the worker's probe found working must work here too
    (else the task does not run)."""
    if state.boundary["scratch_quota"]:
        fsview.mount_scratch(scratch, max_bytes=limits.max_scratch_bytes, max_files=limits.max_scratch_files,
                             uid=state.drop_uid)
    os.chdir(scratch)
    isolation.apply_limits(limits)
    isolation.drop_privileges(state.drop_uid)
    isolation.die_with_parent()
    if state.boundary["landlock"]:
        fsview.restrict(fsview.View(read=state.read, scratch=scratch))
    seccomp.install_seccomp()


def _task_process(request: dict[str, Any], limits: SandboxLimits, scratch: str, wfd: int, report_fd: int,
                  state: WorkerState) -> NoReturn:
    from sandbox.execute import TimeLimitExceeded, run_program
    from sandbox.runtime import AuditPolicy

    try:
        isolation.die_with_parent()  # again after the uid drop, which clears it
        keep = sorted((wfd, report_fd))
        os.closerange(3, keep[0])  # the parent's pipes must be out of reach
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 16)
        os.set_blocking(report_fd, False)  # a flood of denials must never block the task on a full pipe
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        _enter_view(limits, scratch, state)
        layers = request.get("python_layers", True) is not False
        policy = AuditPolicy(scratch, report_fd=report_fd)
        if layers:
            sys.addaudithook(policy)
        payload = run_program(state.env, str(request["source"]), dict(request.get("factors") or {}),
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


def _denials(fd: int) -> list[tuple[int | None, str]]:
    """What the task's audit hook reported as it happened, as (program line, message): read after the task
    has exited."""
    data = b""
    try:
        while len(data) < 65_536 and (chunk := os.read(fd, 65_536)):
            data += chunk
    finally:
        os.close(fd)
    found = []
    for text in data.decode("utf-8", "replace").splitlines():
        line, _, message = text.partition("\t")
        if message:
            found.append((int(line) if line.isdigit() and int(line) > 0 else None, message[:_DENIAL_CHARS]))
    return found


def _exited_by(pid: int, deadline: float) -> bool:
    """Whether the task process has exited (not yet reaped) by `deadline`; waits on a pidfd where the
    kernel has one (Linux >= 5.3), else polls."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(left, 0.005))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _collect(pid: int, rfd: int, limits: SandboxLimits,
             started: float) -> tuple[dict[str, Any], bytes | None]:
    cap = limits.max_result_bytes + 4 * limits.max_output_chars + 65_536
    deadline = started + limits.wall_s + 1.0  # the task's own SIGALRM fires at wall_s and reports the line
    payload, error = None, None
    try:
        payload = read_frame(rfd, cap=cap, deadline=deadline)
    except FrameTimeout:
        error = {"kind": "timeout", "message": f"wall-clock limit of {limits.wall_s:g} s exceeded"}
    except FrameTooLarge:
        error = {"kind": "output_too_large", "message": f"the result exceeds {cap} bytes"}
    except FrameError:
        pass
    finally:
        os.close(rfd)
    if not _exited_by(pid, deadline if error is None else 0.0):
        os.kill(pid, signal.SIGKILL)  # the pid 1 of its namespace: everything in it dies too
        if error is None:
            after = "" if payload is None else " (the task process did not exit after handing in its result)"
            error = {"kind": "timeout", "message": f"wall-clock limit of {limits.wall_s:g} s exceeded{after}"}
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    if error is None and payload is not None and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        payload = None  # a result counts only from a task process that then exited cleanly
    if payload is None and error is None:
        error = _classify_death(status, cpu, limits)
    header = {"error": error, "payload": payload is not None and error is None, "cpu_s": round(cpu, 4),
              "maxrss_mb": round(usage.ru_maxrss / 1024, 1)}
    return header, payload if header["payload"] else None


def _forbidden(denied: list[tuple[int | None, str]], source: str) -> dict[str, Any]:
    """The verdict when the task's audit hook denied something: the first denial, its program line."""
    line, message = denied[0]
    more = f" (and {len(denied) - 1} more denied operations)" if len(denied) > 1 else ""
    lines = source.splitlines()
    shown = lines[line - 1].strip() if line and line <= len(lines) else ""
    where = f"line {line}\n    {shown}\n" if line else ""
    return {"kind": "forbidden", "message": message + more, "line": line,
            "traceback": f"{where}forbidden: {message}{more}"}


def serve(request: dict[str, Any], fd_out: int, state: WorkerState) -> None:
    """Run one request in a task process and write the verdict (header, then the task's payload)."""
    limits = SandboxLimits(**request["limits"])
    scratch = tempfile.mkdtemp(prefix="task-", dir=state.scratch_root)
    if state.drop_uid is not None and os.geteuid() == 0:
        os.chown(scratch, state.drop_uid, state.drop_uid)
    isolation.enter_task_namespaces(state.task_namespaces)
    rfd, wfd = os.pipe()
    report_r, report_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        os.close(report_r)
        _task_process(request, limits, scratch, wfd, report_w, state)
    os.close(wfd)
    os.close(report_w)
    try:
        header, payload = _collect(pid, rfd, limits, started)
        denied = _denials(report_r)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if denied and (header["error"] or {}).get("kind") != "forbidden":
        # decided here, outside the task: whatever the task's own frame says, a denial makes it forbidden;
        # its payload still travels, for the program's output only
        header = {**header, "error": _forbidden(denied, str(request.get("source", ""))),
                  "payload": payload is not None}
    write_json(fd_out, {"id": request.get("id"), **header})
    if header["payload"] and payload is not None:
        write_frame(fd_out, payload)


def run_session(fd_in: int, fd_out: int, state: WorkerState, taken: int) -> int:
    """Read one request, tell the worker on `taken` (it forks the next session then), serve it, answer;
    the exit status for the worker (`EXIT_PIPE_CLOSED`: stop)."""
    try:
        request = read_json(fd_in, cap=REQUEST_CAP)
    except FrameError:  # the parent closed the pipe: shut down
        return EXIT_PIPE_CLOSED
    os.write(taken, b"1")
    os.close(taken)
    try:
        serve(request, fd_out, state)
    except Exception as err:  # report; the parent decides whether to replace the worker
        error = {"kind": "crashed", "message": f"sandbox worker error: {type(err).__name__}: {err}"}
        write_json(fd_out, {"id": request.get("id") if isinstance(request, dict) else None, "error": error,
                            "payload": False})
    return 0
