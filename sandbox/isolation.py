"""Process-level isolation for task processes: namespaces, rlimits, privilege drop (the seccomp filter is
`sandbox.seccomp`).

Everything here is best effort and probed at run time: each step reports whether it took effect, and
the Python-level layers (restricted builtins, attribute guard, audit hook) apply regardless. Nothing
needs root: the namespaces come from an unprivileged user namespace where the kernel allows it.

Two sets of namespaces: the warm worker's own (network, IPC), made once; and each task's (PID, IPC, UTS),
made fresh for every task by the throwaway process that forks it (`enter_task_namespaces`): the task is
pid 1 of a namespace holding nothing else (no other process to name, signal or renice, and all of it dies
with it), its SysV/POSIX IPC objects vanish with it, and its host name is "sandbox", not the host's.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import resource
import signal
from typing import Any

from sandbox.config import SandboxLimits

CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
# each task's own namespaces, by the name `SandboxPool.isolation` reports them under
TASK_NAMESPACES = {"pidns": CLONE_NEWPID, "ipcns": CLONE_NEWIPC, "utsns": CLONE_NEWUTS}
TASK_HOSTNAME = b"sandbox"


@functools.cache  # loaded once in the worker: a task inherits it instead of paying for it
def libc() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    lib.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    lib.unshare.argtypes = [ctypes.c_int]
    if hasattr(lib, "sethostname"):
        lib.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _unshare_in(libc: ctypes.CDLL, flags: int, user: bool) -> bool:
    if libc.unshare(flags) != 0:
        return False
    if user:  # map our own ids, or file creation fails with EOVERFLOW inside the namespace
        uid, gid = os.geteuid(), os.getegid()
        with contextlib.suppress(OSError):  # absent on old kernels
            _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    return True


def _probe_unshare(libc: ctypes.CDLL, flags: int, user: bool) -> bool:
    """Try the namespace switch in a throwaway child first, so a half-done switch never hits the worker."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if _unshare_in(libc, flags, user) else 1)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def enter_namespaces() -> dict[str, Any]:
    """Move this (single-threaded) process into fresh network and IPC namespaces where permitted.

    A new network namespace has only a downed loopback interface: no network at all. Root can unshare
    directly; other users go through an unprivileged user namespace when the kernel allows it.
    """
    lib = libc()
    if lib is None or not hasattr(lib, "unshare"):
        return {"netns": False, "userns": False, "note": "libc unshare unavailable"}
    attempts = [(CLONE_NEWNET | CLONE_NEWIPC, False)] if os.geteuid() == 0 else []
    attempts.append((CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC, True))
    for flags, user in attempts:
        try:
            if _probe_unshare(lib, flags, user) and _unshare_in(lib, flags, user):
                return {"netns": True, "userns": user, "note": ""}
        except OSError as err:
            return {"netns": False, "userns": False, "note": f"unshare failed: {err}"}
    return {"netns": False, "userns": False, "note": "unshare not permitted here"}


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def apply_limits(limits: SandboxLimits) -> None:
    """rlimits for this task process: address space, CPU, file size, open files, processes, core dumps."""
    address_space = _vm_size_bytes() + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    cpu = max(1, math.ceil(limits.cpu_s))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # soft → SIGXCPU, hard → SIGKILL
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes, limits.max_file_bytes))
    _, nofile_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nofile = limits.max_open_files if nofile_hard == resource.RLIM_INFINITY else min(
        limits.max_open_files, nofile_hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # not enforced for root; seccomp covers that case


def drop_privileges(uid: int | None) -> bool:
    """When running as root, become `uid` (nobody by default) so file permissions bite too."""
    if uid is None or os.geteuid() != 0:
        return False
    try:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    except OSError:  # a container without CAP_SETUID: keep going with the other layers
        return False
    return True


def enter_task_namespaces(names: frozenset[str] | set[str]) -> None:
    """Move this process into fresh `names` namespaces (keys of `TASK_NAMESPACES`) before it forks a task;
    a new PID namespace takes effect for the next child, which becomes its pid 1. Raises OSError: a
    namespace the worker's probe found working must work here too, or the task does not run."""
    if not names:
        return
    lib = libc()
    if lib is None:
        raise OSError("libc unavailable")
    flags = 0
    for name in names:
        flags |= TASK_NAMESPACES[name]
    if lib.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), f"unshare of the task namespaces {sorted(names)} failed")
    if "utsns" in names and lib.sethostname(TASK_HOSTNAME, len(TASK_HOSTNAME)) != 0:
        raise OSError(ctypes.get_errno(), "sethostname in the task's UTS namespace failed")


def _task_namespace_works(name: str) -> bool:
    enter_task_namespaces({name})
    if name != "pidns":
        return True
    pid = os.fork()  # the first child of the new namespace must be its pid 1
    if pid == 0:
        os._exit(0 if os.getpid() == 1 else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def probe_task_namespaces() -> frozenset[str]:
    """Which of `TASK_NAMESPACES` this process can make for its tasks, each tried in a throwaway child."""
    works = set()
    for name in TASK_NAMESPACES:
        pid = os.fork()
        if pid == 0:
            try:
                os._exit(0 if _task_namespace_works(name) else 1)
            except BaseException:
                os._exit(1)
        if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0:
            works.add(name)
    return frozenset(works)


def die_with_parent() -> bool:
    """SIGKILL this process when the process that forked it dies (set after the uid drop, which clears
    it): a backstop to the process-group kill of the pool."""
    lib = libc()
    return lib is not None and lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
