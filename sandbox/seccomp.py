"""The seccomp filter of a task process (x86_64): hand-assembled classic BPF, loaded with ctypes (no
dependency); it needs only `PR_SET_NO_NEW_PRIVS`, no privilege.

What it refuses (EPERM), and why each is out of reach of an honest generation program:

- whole calls: the network, new processes and programs, other processes' memory, namespaces and mounts
  (the new mount API too), kernel modules, raising limits, io_uring (which bypasses seccomp); leaving the
  worker's process group (`setsid`, `setpgid`: a task that detaches would outlive the pool's kill); SysV
  and POSIX IPC (state that outlives a task); `memfd_create`/`memfd_secret` (memory outside RLIMIT_AS);
  file metadata (the xattr family, `utime*`, `chmod*`, `chown*`, `file_setattr`: Landlock does not
  mediate them); watching (`inotify*`, `fanotify*`, `listmount`, `statmount`); the host and domain name;
  signals and process handles by the other routes (`rt_*sigqueueinfo`, `pidfd_*`, `kcmp`).
- calls allowed only on the task itself: signals (`kill`, `tkill`, `tgkill`: the first argument must be
  its own pid); scheduling, priority, affinity and I/O priority (`sched_set*`, `setpriority`,
  `ioprio_set`: pid 0 only); `getsid`/`getpgid` (pid 0 only: no enumerating other processes).
- one argument refused: `prlimit64` may only query (new limit NULL); `fcntl(F_SETPIPE_SZ)` (a pipe grows
  its kernel buffer outside RLIMIT_AS).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import struct

from sandbox.isolation import libc  # loaded once in the worker; a task inherits it

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_AUDIT_ARCH_X86_64 = 0xC000003E
_LD_ABS, _JEQ, _JGE, _JA, _RET = 0x20, 0x15, 0x35, 0x05, 0x06
_ARG = (16, 24, 32, 40, 48, 56)
_SOCK_FILTER = struct.Struct("=HBBI")  # offset of the low 32 bits of each argument in seccomp_data

# x86_64 syscall numbers, by what they would let a task do.
DENIED: dict[str, tuple[int, ...]] = {
    "network": (41, 42, 43, 49, 50, 53, 288),  # socket connect accept bind listen socketpair accept4
    "processes": (56, 57, 58, 59, 322, 435),  # clone fork vfork execve execveat clone3
    "other processes' memory": (101, 310, 311, 440, 448),  # ptrace process_vm_* process_madvise/mrelease
    "namespaces and mounts": (272, 308, 165, 166, 155, 161,  # unshare setns mount umount2 pivot_root chroot
                              428, 429, 430, 431, 432, 433, 442, 467),  # open_tree … mount_setattr
    "kernel": (321, 298, 250, 248, 249, 323, 103,  # bpf perf_event_open keys userfaultfd syslog
               175, 313, 176, 246, 320, 169, 167, 168, 303, 304),  # modules kexec reboot swap *_by_handle_at
    "limits and io_uring": (425, 426, 427, 160, 135),  # io_uring_* setrlimit personality
    "leaving the process group": (112, 109),  # setsid setpgid
    "SysV and POSIX IPC": (29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71,  # shm* sem* msg*
                           240, 241, 242, 243, 244, 245),  # mq_*
    "memory outside RLIMIT_AS": (319, 447),  # memfd_create memfd_secret
    "file metadata": (188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199,  # the xattr family
                      463, 464, 465, 466,  # setxattrat getxattrat listxattrat removexattrat
                      132, 235, 261, 280,  # utime utimes futimesat utimensat
                      90, 91, 268, 452,  # chmod fchmod fchmodat fchmodat2
                      92, 93, 94, 260,  # chown fchown lchown fchownat
                      468, 469),  # file_getattr file_setattr
    "watching": (253, 254, 255, 294, 300, 301, 457, 458),  # inotify_* fanotify_* statmount listmount
    "host names": (170, 171),  # sethostname setdomainname
    "signals and handles by other routes": (129, 297, 424, 434, 438, 312),  # rt_(tg)sigqueueinfo pidfd_* kcmp
}
_SIGNAL_SELF_ONLY = (62, 200, 234)  # kill tkill tgkill: the first argument must be our own pid
_SELF_ONLY = (124, 121, 144, 142, 314, 203)  # getsid getpgid sched_setscheduler/param/attr/affinity: pid 0
_SETPRIORITY, _IOPRIO_SET = 141, 251  # (PRIO_PROCESS, 0) and (IOPRIO_WHO_PROCESS, 0) only
_PRLIMIT64 = 302  # allowed only as a query (new_limit == NULL): glibc's getrlimit uses it
_FCNTL, _F_SETPIPE_SZ = 72, 1031

Insn = tuple[int, int, int, int]


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> Insn:
    return (code, jt, jf, k)


def _allow_if(nr: int, conds: list[tuple[int, int]]) -> list[Insn]:
    """`nr` is allowed only if every (offset, value) 32-bit word of seccomp_data matches, else EPERM."""
    length = 1 + 2 * len(conds) + 2
    block = [_bpf(_JEQ, nr, 0, length - 1)]
    for j, (offset, value) in enumerate(conds):
        pos = 2 + 2 * j
        block += [_bpf(_LD_ABS, offset), _bpf(_JEQ, value, 0, (length - 1) - pos - 1)]
    return block + [_bpf(_RET, _RET_ALLOW), _bpf(_RET, _RET_EPERM)]


def _deny_if(nr: int, offset: int, value: int) -> list[Insn]:
    """`nr` is refused when the 32-bit word at `offset` equals `value`, otherwise allowed."""
    return [_bpf(_JEQ, nr, 0, 4), _bpf(_LD_ABS, offset), _bpf(_JEQ, value, 0, 1), _bpf(_RET, _RET_EPERM),
            _bpf(_RET, _RET_ALLOW)]


def _tree(blocks: list[tuple[int, list[Insn]]], leaf: int = 6) -> list[Insn]:
    """`blocks` (sorted by syscall number; each falls through when the number is not its own, with the number
    still in the accumulator) as a binary search on the number, then a short chain: a call's path is a
    dozen instructions, not the whole list. The kernel emulates the filter once per syscall number when it
    is installed (its allow cache), so a long chain costs milliseconds in every task."""
    if len(blocks) <= leaf:
        return [insn for _, block in blocks for insn in block] + [_bpf(_RET, _RET_ALLOW)]
    mid = len(blocks) // 2
    low, high = _tree(blocks[:mid], leaf), _tree(blocks[mid:], leaf)
    # number >= the first of the upper half: take the jump over the lower half, else skip it
    return [_bpf(_JGE, blocks[mid][0], 0, 1), _bpf(_JA, len(low)), *low, *high]


def seccomp_program(pid: int) -> list[Insn]:
    """The BPF filter for x86_64 as (code, jt, jf, k) tuples; `pid` is the only signal target allowed.
    Every argument block returns, so a block that does not match leaves the syscall number in the
    accumulator for the next one."""
    blocks = {nr: [_bpf(_JEQ, nr, 0, 1), _bpf(_RET, _RET_EPERM)] for group in DENIED.values() for nr in group}
    for nr in _SIGNAL_SELF_ONLY:
        blocks[nr] = _allow_if(nr, [(_ARG[0], pid & 0xFFFFFFFF)])
    for nr in _SELF_ONLY:
        blocks[nr] = _allow_if(nr, [(_ARG[0], 0)])
    blocks[_SETPRIORITY] = _allow_if(_SETPRIORITY, [(_ARG[0], 0), (_ARG[1], 0)])
    blocks[_IOPRIO_SET] = _allow_if(_IOPRIO_SET, [(_ARG[0], 1), (_ARG[1], 0)])
    blocks[_PRLIMIT64] = _allow_if(_PRLIMIT64, [(_ARG[2], 0), (_ARG[2] + 4, 0)])  # both halves of the pointer
    blocks[_FCNTL] = _deny_if(_FCNTL, _ARG[1], _F_SETPIPE_SZ)
    head = [_bpf(_LD_ABS, 4), _bpf(_JEQ, _AUDIT_ARCH_X86_64, 1, 0), _bpf(_RET, _RET_KILL_PROCESS),
            _bpf(_LD_ABS, 0), _bpf(_JGE, 0x40000000, 0, 1), _bpf(_RET, _RET_EPERM)]  # x32 ABI: refuse
    return head + _tree(sorted(blocks.items()))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@functools.lru_cache(maxsize=2)
def packed_program(pid: int) -> bytes:
    """`seccomp_program(pid)` as the kernel reads it (struct sock_filter: u16 code, u8 jt, u8 jf, u32 k).
    Cached: a worker packs it for pid 1 (the task in its own PID namespace) once, before any fork."""
    return b"".join(_SOCK_FILTER.pack(*insn) for insn in seccomp_program(pid))


def seccomp_supported() -> bool:
    return platform.machine() == "x86_64" and libc() is not None


def install_seccomp() -> bool:
    """Load the filter into this process (irreversible, inherited by any child). False if unsupported."""
    if not seccomp_supported():
        return False
    lib = libc()
    assert lib is not None
    code = packed_program(os.getpid())
    buf = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // _SOCK_FILTER.size, ctypes.addressof(buf))
    if lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return lib.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) == 0
