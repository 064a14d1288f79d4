"""The task process's view of the filesystem, enforced by the kernel: a size- and inode-limited tmpfs as
its only writable place, and read access only to the code it runs on.

This is the boundary that holds when a program wins inside its interpreter (the Python layers of
`sandbox.policy` and `sandbox.runtime` are advisory: early, clear errors for honest mistakes). Two kernel
features, both available to an unprivileged process on Linux ≥ 5.13 and used without any extra package:

- **Landlock** (`landlock(7)`): after `landlock_restrict_self`, every `open`, `mkdir`, `unlink`, `rename`,
  … outside the allowed trees fails with EACCES, for this process and anything it could start, and it can
  never be lifted. Allowed: read (and map) the directories the warm worker imported code from — the
  standard library, each imported package's own folder, the project's imported packages — and full access
  to the scratch directory. Nothing else: no `/etc`, no `/root`, no run directories, no other project
  files, no `/tmp`, no `/dev/shm`. From Landlock ABI 4, TCP bind/connect are denied too; from ABI 6,
  signals to and abstract unix sockets of processes outside the sandbox.
- **A private tmpfs on the scratch directory** in a new mount namespace of the task process (`size=` and
  `nr_inodes=` bound the bytes and files it can hold; it vanishes with the process). It needs
  CAP_SYS_ADMIN in the task's user namespace: root, or the worker's own user namespace.

Bubblewrap was the alternative (a setuid-free helper binary, in Debian): it would need `execve` in the
worker for every task, an apt package on every machine, and the fork-from-warm design would be lost.
Landlock applies in the already-forked task process, at no measurable cost.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import site
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# x86_64 / aarch64 share the generic syscall numbers for Landlock
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# filesystem access rights, by the ABI version that introduced them
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO = 1 << 8, 1 << 9, 1 << 10
FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 11, 1 << 12
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
# rights that apply to a regular file (a rule on a file may only carry these)
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

READ = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE
SCRATCH = (FS_READ_FILE | FS_READ_DIR | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR
           | FS_MAKE_REG | FS_REFER | FS_TRUNCATE)

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class FsViewError(OSError):
    """The filesystem view could not be set up; the task must not run."""


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is absent or disabled."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    try:
        v = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(
            _CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(v))


@dataclass(frozen=True)
class View:
    """What a task may see: trees it may read, and its scratch directory (read and write)."""

    read: tuple[str, ...]
    scratch: str


def import_roots(modules: Iterable[object] | None = None, project_root: str | None = None) -> tuple[str, ...]:
    """The smallest set of trees holding the code of the (imported) `modules`: the standard library, each
    third-party package's own folder under site-packages, each project package's folder."""
    project = os.path.realpath(project_root or str(Path(__file__).resolve().parent.parent))
    sites = sorted({os.path.realpath(p) for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"],
                                                   sysconfig.get_paths()["platlib"]] if os.path.isdir(p)},
                   key=len, reverse=True)
    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    roots: set[str] = set()
    for m in list(modules if modules is not None else sys.modules.values()):
        if getattr(m, "__name__", "") == "__main__":  # the caller's script, not code a program runs on
            continue
        f = getattr(m, "__file__", None)
        if not isinstance(f, str) or not f:
            continue
        path = os.path.realpath(f)
        where = next((sp for sp in sites if path.startswith(sp + os.sep)), None)
        if where is None and path.startswith(project + os.sep):
            where = project
        if where is not None:
            top = path[len(where) + 1:].split(os.sep)[0]
            roots.add(os.path.join(where, top))
            continue
        lib = next((s for s in stdlib if path.startswith(s + os.sep)), None)
        roots.add(lib if lib is not None else os.path.dirname(path))
    return tuple(sorted(roots))


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            access &= _FILE_RIGHTS
        attr = _PathBeneathAttr(access, fd)
        if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(attr), ctypes.c_uint32(0)) != 0:
            raise FsViewError(ctypes.get_errno(), f"landlock_add_rule({path}) failed")
    finally:
        os.close(fd)


def restrict(view: View) -> int:
    """Apply the Landlock view to this process (irreversible). Returns the ABI used; raises `FsViewError`
    if the kernel refuses (the caller must then not run the program)."""
    abi = landlock_abi()
    if abi < 1:
        raise FsViewError("Landlock is not available in this kernel")
    libc = _libc()
    handled = _FS_BY_ABI.get(abi, _FS_BY_ABI[5])
    attr = _RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = int(libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                               ctypes.c_uint32(0)))
    if ruleset < 0:
        raise FsViewError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in view.read:
            if os.path.exists(path):
                _add_rule(libc, ruleset, path, READ & handled)
        _add_rule(libc, ruleset, view.scratch, SCRATCH & handled)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise FsViewError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise FsViewError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def mount_scratch(scratch: str, *, max_bytes: int, max_files: int, uid: int | None) -> None:
    """Give this process a private mount namespace with a fresh tmpfs on `scratch`, bounded to
    `max_bytes` and `max_files` inodes, owned by `uid` (the dropped user) or the caller. Raises OSError
    where mount namespaces are not permitted."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) is not permitted")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:  # nothing propagates back out
        raise OSError(ctypes.get_errno(), "making the mounts private failed")
    owner = uid if uid is not None and os.geteuid() == 0 else os.geteuid()
    group = owner if uid is not None and os.geteuid() == 0 else os.getegid()
    opts = f"size={max(4096, max_bytes)},nr_inodes={max(2, max_files)},mode=700,uid={owner},gid={group}"
    if libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.encode()) != 0:
        raise OSError(ctypes.get_errno(), f"mounting a tmpfs on {scratch} failed")
