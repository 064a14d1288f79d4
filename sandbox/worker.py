"""The warm worker process: imports numpy and the scene types once, then, for each request, forks a
throwaway session (`sandbox.session`) before the request is read; the session forks the task process. So
every program starts from the same clean, warm state, nothing it does outlives it, and the worker never
holds a request or a result that a later task could find in the memory it inherits.

Started by `SandboxPool` as `python -I -c <bootstrap> FD_IN FD_OUT SCRATCH_ROOT DROP_UID BOUNDARY` (BOUNDARY:
"boundary" or "no-boundary", whether to set up `sandbox.fsview` in task processes) with a minimal
environment. Protocol (length-prefixed JSON, see `sandbox.protocol`): the worker sends `{"ready": ...}`,
then for each request `{"id", "source", "factors", "seed", "limits"}` it answers with a header
`{"id", "error": null | {kind, message, line?, traceback?}, "payload": bool, "cpu_s", "maxrss_mb"}`,
followed by the task process's own payload frame when `payload` is true (with an error, for the program's
output only). The parent re-validates everything.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sys
import tempfile
import warnings
from typing import Any

from sandbox import fsview, isolation, seccomp
from sandbox.config import SandboxLimits
from sandbox.protocol import write_json
from sandbox.session import EXIT_PIPE_CLOSED, WorkerState, run_session

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
        os._exit(0 if seccomp.install_seccomp() else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


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


def _next_session(fd_in: int, fd_out: int, state: WorkerState) -> tuple[int, bool]:
    """Fork the session that reads, runs and answers the next request; returns once it has read the whole
    request (True: the next session may be forked, while this one runs) or has ended without one."""
    worker = os.getpid()
    taken_r, taken_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:  # a session that outlived its worker would answer for a worker the pool thinks is there
            os.close(taken_r)
            isolation.die_with_parent()
            if os.getppid() == worker:
                code = run_session(fd_in, fd_out, state, taken_w)
        finally:
            os._exit(code)  # never back into this loop, whatever happened
    os.close(taken_w)
    try:
        return pid, os.read(taken_r, 1) == b"1"  # EOF: the session ended without taking a request
    finally:
        os.close(taken_r)


def _serve_forever(fd_in: int, fd_out: int, state: WorkerState) -> None:
    """One session per request, the next forked as soon as the last has its request, until the pool closes
    the request pipe."""
    while True:
        pid, taken = _next_session(fd_in, fd_out, state)
        if not taken and os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == EXIT_PIPE_CLOSED:
            return
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:  # sessions that have answered since
                pass


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
    per_task = isolation.probe_task_namespaces()
    gc.collect()
    gc.freeze()  # a collection in a session or task never walks (and so copies) the worker's own objects
    if seccomp.seccomp_supported() and "pidns" in per_task:  # loads libc here, once, for every task
        seccomp.packed_program(1)  # each task is pid 1 of its namespace: its filter, packed once
    state = WorkerState(scratch_root=scratch_root, drop_uid=drop_uid, env=env, boundary=boundary, read=read,
                        task_namespaces=per_task)
    info = {**namespaces, "seccomp": _probe_seccomp(),
            "drop_privileges": drop_uid is not None and os.geteuid() == 0, **boundary,
            **{name: name in per_task for name in isolation.TASK_NAMESPACES}, "fresh_session": True,
            "readable": list(read)}
    write_json(fd_out, {"ready": True, "pid": os.getpid(), "isolation": info})
    _serve_forever(fd_in, fd_out, state)
