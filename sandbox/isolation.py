"""Process-level isolation for task processes: namespaces, rlimits, privilege drop, a seccomp filter.

Everything here is best effort and probed at run time: each step reports whether it took effect, and
the Python-level layers (restricted builtins, attribute guard, audit hook) apply regardless. Nothing
needs root: a network namespace comes from an unprivileged user namespace where the kernel allows it,
and seccomp only needs `PR_SET_NO_NEW_PRIVS`. The seccomp filter is hand-assembled classic BPF, loaded
with ctypes (no dependency).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import platform
import resource
from typing import Any

from sandbox.config import SandboxLimits

CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_AUDIT_ARCH_X86_64 = 0xC000003E
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06

# x86_64 syscalls a generation program never needs: network, new processes/programs, other processes'
# memory, namespaces, mounts, kernel modules, raising limits, io_uring (which bypasses seccomp).
_DENY_X86_64 = (
    41, 42, 43, 49, 50, 53, 288,  # socket connect accept bind listen socketpair accept4
    56, 57, 58, 59, 322, 435,  # clone fork vfork execve execveat clone3
    101, 310, 311,  # ptrace process_vm_readv process_vm_writev
    272, 308, 165, 166, 155, 161,  # unshare setns mount umount2 pivot_root chroot
    321, 298, 250, 248, 249, 323,  # bpf perf_event_open keyctl add_key request_key userfaultfd
    425, 426, 427, 160, 135,  # io_uring_setup/enter/register setrlimit personality
    175, 313, 176, 246, 320, 169, 167, 168, 303, 304,  # modules kexec reboot swap *_by_handle_at
)
_SIGNAL_SELF_ONLY = (62, 200, 234)  # kill tkill tgkill: allowed only when the first argument is our pid
_PRLIMIT64 = 302  # allowed only as a query (new_limit == NULL): glibc's getrlimit uses it


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.unshare.argtypes = [ctypes.c_int]
    return libc


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
    libc = _libc()
    if libc is None or not hasattr(libc, "unshare"):
        return {"netns": False, "userns": False, "note": "libc unshare unavailable"}
    attempts = [(CLONE_NEWNET | CLONE_NEWIPC, False)] if os.geteuid() == 0 else []
    attempts.append((CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC, True))
    for flags, user in attempts:
        try:
            if _probe_unshare(libc, flags, user) and _unshare_in(libc, flags, user):
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


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def _allow_if(nr: int, conds: list[tuple[int, int]]) -> list[tuple[int, int, int, int]]:
    """`nr` is allowed only if every (offset, value) 32-bit word of seccomp_data matches, else EPERM."""
    length = 1 + 2 * len(conds) + 2
    block = [_bpf(_JEQ, nr, 0, length - 1)]
    for j, (offset, value) in enumerate(conds):
        pos = 2 + 2 * j
        block += [_bpf(_LD_ABS, offset), _bpf(_JEQ, value, 0, (length - 1) - pos - 1)]
    return block + [_bpf(_RET, _RET_ALLOW), _bpf(_RET, _RET_EPERM)]


def seccomp_program(pid: int) -> list[tuple[int, int, int, int]]:
    """The BPF filter for x86_64 as (code, jt, jf, k) tuples; `pid` is the only signal target allowed."""
    prog = [_bpf(_LD_ABS, 4), _bpf(_JEQ, _AUDIT_ARCH_X86_64, 1, 0), _bpf(_RET, _RET_KILL_PROCESS),
            _bpf(_LD_ABS, 0), _bpf(_JGE, 0x40000000, 0, 1), _bpf(_RET, _RET_EPERM)]  # x32 ABI: refuse
    for nr in _DENY_X86_64:
        prog += [_bpf(_JEQ, nr, 0, 1), _bpf(_RET, _RET_EPERM)]
    for nr in _SIGNAL_SELF_ONLY:
        prog += _allow_if(nr, [(16, pid & 0xFFFFFFFF)])  # a skipped block leaves nr in the accumulator
    prog += _allow_if(_PRLIMIT64, [(32, 0), (36, 0)])  # args[2] (new_limit) must be NULL
    return prog + [_bpf(_RET, _RET_ALLOW)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_supported() -> bool:
    return platform.machine() == "x86_64" and _libc() is not None


def install_seccomp() -> bool:
    """Load the filter into this process (irreversible, inherited by any child). False if unsupported."""
    if not seccomp_supported():
        return False
    libc = _libc()
    assert libc is not None
    prog = seccomp_program(os.getpid())
    filters = (_SockFilter * len(prog))(*[_SockFilter(c, jt, jf, k) for c, jt, jf, k in prog])
    fprog = _SockFprog(len(prog), filters)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) == 0
