"""Issue #43, the sandbox round two: what a program with full Python inside its task process could still do
after issue #11, one finding at a time, each shown contained.

Most programs here run in a pool with `python_layers=False` (the real builtins, no static check, no audit
hook): they stand for a program that has won inside its interpreter, so only the kernel layers hold. The
last part runs honest programs with the Python layers on.
"""

from __future__ import annotations

import ctypes
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import PoolConfig, SandboxLimits, SandboxPool, seccomp
from sandbox.results import MAX_MESSAGE_CHARS, MAX_TRACEBACK_CHARS, SandboxError
from tests.sandbox.conftest import TEST_LIMITS, assert_alive
from tests.sandbox.programs import FORGE, OK_PROGRAM, body

NOBODY = 65534
LIMITS = SandboxLimits(cpu_s=2, wall_s=3, memory_mb=256, max_scratch_bytes=4_000_000, max_scratch_files=32)
GRACE_S = 2.0
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="tasks are told apart by the uid they drop to")
CTYPES = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"


@pytest.fixture(scope="module")
def unguarded() -> Iterator[SandboxPool]:
    """Two workers (one task can aim at the other's), the real builtins, only the OS layers stand."""
    with SandboxPool(PoolConfig(workers=2, limits=LIMITS, python_layers=False, grace_s=GRACE_S)) as p:
        yield p


def _run(pool: SandboxPool, source: str, factors: dict | None = None, limits: SandboxLimits = LIMITS):
    return pool.run(source, factors=factors, seed=0, limits=limits)


def _ok_stdout(pool: SandboxPool, source: str, factors: dict | None = None) -> str:
    r = _run(pool, source, factors)
    assert r.ok, r.error
    return r.stdout


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _uid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _forks(pool: SandboxPool) -> list[int]:
    """Processes forked from the pool's workers (their command line names the pool's scratch root) that
    are not a worker: sessions (root) and task processes, wherever they have moved since."""
    workers = pool.worker_pids
    roots = {line.split(b"\0")[-4] for line in map(_cmdline, workers) if line.count(b"\0") > 4}
    assert roots and all(b"coda-sandbox-" in r for r in roots), roots
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in workers
            and any(r in _cmdline(int(p)).split(b"\0") for r in roots)]


def _tasks(pool: SandboxPool) -> list[int]:
    """The pool's task processes: its forks that run as nobody (a worker's session stays root)."""
    return [p for p in _forks(pool) if _uid(p) == NOBODY]


# ---- 1. a task cannot outlive its worker or its deadline --------------------------------------------------
OK_FRAME = "('{\"ok\": true, \"stdout\": \"\", \"scenes\": [' + _scene().model_dump_json() + ']}').encode()"
DETACH = FORGE.replace("PAYLOAD", OK_FRAME).replace("    os._exit(0)", '''
    hold = bytearray(50_000_000)
    time.sleep(60)''').replace("import os, json", '''import os, json, signal, time
try:
    os.setsid()
except OSError:
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
signal.setitimer(signal.ITIMER_REAL, 0)
signal.signal(signal.SIGALRM, signal.SIG_IGN)''')


@AS_ROOT
def test_a_task_that_detaches_and_hands_in_a_frame_is_gone_within_the_grace_time(
        unguarded: SandboxPool) -> None:
    """The review's task: setsid(), a complete result frame, then it slept on holding memory — as nobody,
    with ppid 1, after the pool had given up on its worker."""
    r = _run(unguarded, DETACH)
    try:
        assert not r.ok and r.error is not None and r.error.kind == "timeout", r
        deadline = time.monotonic() + GRACE_S
        while _tasks(unguarded) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _tasks(unguarded) == []
    finally:
        for pid in _tasks(unguarded):  # never leave one behind, even when the test fails
            os.kill(pid, 9)
    assert_alive(unguarded)


# ---- 2. nothing outlives a task: SysV IPC -----------------------------------------------------------------
SHM_WRITE = CTYPES + body('''
    libc.shmat.restype = ctypes.c_void_p
    seg = libc.shmget(0xC0DA43, 4096, 0o1666)  # IPC_CREAT | 0666
    q = libc.msgget(0xC0DA44, 0o1666)
    print("shm", seg, ctypes.get_errno(), "msg", q)
    if seg >= 0:
        addr = libc.shmat(seg, None, 0)
        ctypes.memmove(addr, b"SECRET-OF-TASK-A", 16)
    if q >= 0:
        libc.msgsnd(q, b"\\x01\\0\\0\\0\\0\\0\\0\\0SECRET-MSG-OF-A", 15, 0o4000)''')
SHM_READ = CTYPES + body('''
    libc.shmat.restype = ctypes.c_void_p
    seg = libc.shmget(0xC0DA43, 0, 0)
    if seg >= 0:
        print("read", ctypes.string_at(libc.shmat(seg, None, 0), 16))
    q = libc.msgget(0xC0DA44, 0)
    buf = ctypes.create_string_buffer(64)
    if q >= 0 and libc.msgrcv(q, buf, 56, 0, 0o4000) > 0:
        print("read", buf.raw[8:23])''')


def test_sysv_ipc_written_by_one_task_is_not_there_for_the_next(unguarded: SandboxPool) -> None:
    written = _ok_stdout(unguarded, SHM_WRITE)
    seen = [_ok_stdout(unguarded, SHM_READ) for _ in range(2)]  # the two workers in turn
    assert not any("SECRET" in s for s in seen), (written, seen)
    assert written.startswith("shm -1 1 msg -1"), written  # shmget and msgget refused (EPERM)


# ---- 3. no earlier request in the warm worker's heap ------------------------------------------------------
HEAP_SCAN = CTYPES + body('''
    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                   "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc.mallinfo2.restype = Info
    libc.sbrk.restype = ctypes.c_void_p
    libc.sbrk.argtypes = [ctypes.c_ssize_t]
    end = libc.sbrk(0)
    size = libc.mallinfo2().arena
    heap = ctypes.string_at(end - size, size)
    needle = ("CANA" + "RY").encode()
    found, i = set(), heap.find(needle)
    while i >= 0 and len(found) < 50:
        found.add(heap[i:i + 40].decode("ascii", "replace"))
        i = heap.find(needle, i + 1)
    print(size, "|".join(sorted(found)))''')


def test_a_task_cannot_read_the_previous_request_from_the_warm_workers_heap(unguarded: SandboxPool) -> None:
    token = f"{time.monotonic_ns() % 16**8:08x}"
    secret = OK_PROGRAM + f"\n# CANARY-SOURCE-{token}\n"
    notes = [f"CANARY-FACTOR-{token}"] * 2000  # ~50 kB: the next request, smaller, cannot cover it all
    assert _run(unguarded, secret, {"size": 0.03, "notes": notes}).ok
    seen = [_ok_stdout(unguarded, HEAP_SCAN) for _ in range(2)]
    assert all(int(s.split()[0]) > 100_000 for s in seen), seen  # the scan did read a heap
    assert not any("CANARY-" in s for s in seen), seen  # the scan's own source never has it in one piece


# ---- 4. a task cannot change another task's scheduling ----------------------------------------------------
VICTIM = "import time\n" + body("    time.sleep(2.2)")
ATTACK = CTYPES + body('''
    v = int(factors["victim"])
    out = []
    for name, fn in [("nice", lambda: os.setpriority(os.PRIO_PROCESS, v, 19)),
                     ("idle", lambda: os.sched_setscheduler(v, os.SCHED_IDLE, os.sched_param(0))),
                     ("affinity", lambda: os.sched_setaffinity(v, {0})),
                     ("pgrp_nice", lambda: os.setpriority(os.PRIO_PGRP, 0, 19))]:
        try:
            fn()
            out.append(name + " changed")
        except OSError as e:
            out.append(name + " refused " + str(e.errno))
    rc = libc.syscall(251, 1, v, 3 << 13)  # ioprio_set(IOPRIO_WHO_PROCESS, v, IOPRIO_CLASS_IDLE)
    out.append("ioprio " + ("changed" if rc == 0 else "refused " + str(ctypes.get_errno())))
    print(", ".join(out))''')


def _sched(pid: int) -> tuple:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return (os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid), os.sched_getaffinity(pid),
            libc.syscall(252, 1, pid))  # ioprio_get


@AS_ROOT
def test_a_task_cannot_change_another_tasks_scheduling(unguarded: SandboxPool) -> None:
    victim: list = []
    thread = threading.Thread(target=lambda: victim.append(_run(unguarded, VICTIM)))
    thread.start()
    try:
        deadline = time.monotonic() + 2.0
        while not (found := _tasks(unguarded)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(found) == 1, found
        before = _sched(found[0])
        told = _ok_stdout(unguarded, ATTACK, {"victim": found[0]})
        after = _sched(found[0])
    finally:
        thread.join()
    assert victim[0].ok, victim[0].error
    assert after == before, (told, before, after)
    assert "changed" not in told, told


# ---- 5. no metadata written outside scratch ---------------------------------------------------------------
METADATA = "import os\n" + body('''
    for p in factors["paths"]:
        for name, fn in [("utime", lambda: os.utime(p)), ("xattr", lambda: os.setxattr(p, "user.coda", b"1")),
                         ("chmod", lambda: os.chmod(p, 0o600))]:
            try:
                fn()
                print(name, "changed", p)
            except OSError as e:
                print(name, "refused", e.errno)''')


@pytest.mark.parametrize("base", ["/tmp", "/dev/shm"])
def test_metadata_of_files_outside_scratch_cannot_be_written(unguarded: SandboxPool, base: str) -> None:
    d = Path(tempfile.mkdtemp(prefix="coda-meta-", dir=base))
    try:
        d.chmod(0o777)
        f = d / "world_writable.txt"
        f.write_text("x")
        f.chmod(0o666)
        os.chown(f, NOBODY, NOBODY)  # even a file the task's uid owns
        for p in (f, d):
            os.utime(p, (1e9, 1e9))
        told = _ok_stdout(unguarded, METADATA, {"paths": [str(f), str(d)]})
        assert "changed" not in told, told
        assert f.stat().st_mtime == 1e9 and d.stat().st_mtime == 1e9 and f.stat().st_mode & 0o777 == 0o666
        assert os.listxattr(f) == []
    finally:
        for p in d.iterdir():
            p.unlink()
        d.rmdir()


# ---- 6. no watching outside the view ----------------------------------------------------------------------
WATCH = CTYPES + body('''
    fd = libc.inotify_init1(0)
    errno = ctypes.get_errno()
    print("inotify", fd, errno, libc.inotify_add_watch(fd, b"/tmp", 0xFFF) if fd >= 0 else -1)''')
LISTMOUNT = CTYPES + body('''
    class Req(ctypes.Structure):
        _fields_ = [("size", ctypes.c_uint32), ("spare", ctypes.c_uint32), ("mnt_id", ctypes.c_uint64),
                    ("param", ctypes.c_uint64)]
    ids = (ctypes.c_uint64 * 256)()
    n = libc.syscall(458, ctypes.byref(Req(24, 0, 2**64 - 1, 0)), ids, 256, 0)
    print("listmount", n, ctypes.get_errno())
    print("statmount", libc.syscall(457, None, None, 0, 0), ctypes.get_errno())''')
NODE = "import os\n" + body("    print(os.uname().nodename)")
GETSID = "import os\n" + body('''
    try:
        print("sid", os.getsid(int(factors["pid"])))
    except OSError as e:
        print("refused", e.errno)''')


def test_inotify_cannot_watch_a_directory(unguarded: SandboxPool) -> None:
    told = _ok_stdout(unguarded, WATCH)
    assert told.split()[:3] == ["inotify", "-1", "1"], told


def test_listmount_and_statmount_are_refused(unguarded: SandboxPool) -> None:
    told = _ok_stdout(unguarded, LISTMOUNT).split()
    assert told == ["listmount", "-1", "1", "statmount", "-1", "1"], told


def test_the_host_name_is_not_the_hosts(unguarded: SandboxPool) -> None:
    assert _ok_stdout(unguarded, NODE).strip() != socket.gethostname()


def test_getsid_does_not_reach_other_processes(unguarded: SandboxPool) -> None:
    told = _ok_stdout(unguarded, GETSID, {"pid": os.getpid()})
    assert told.startswith("refused"), told


# ---- 7. memory beyond memory_mb ---------------------------------------------------------------------------
MEMORY = "import os, fcntl\n" + body('''
    held, fds = 0, []
    try:
        while held < 300:
            fd = os.memfd_create("hold")
            fds.append(fd)
            for _ in range(15):
                os.write(fd, b"x" * (1 << 20))
                held += 1
        print("memfd held", held, "MiB")
    except OSError as e:
        print("memfd refused", e.errno, "after", held, "MiB")
    r, w = os.pipe()
    try:
        print("pipe grown to", fcntl.fcntl(w, 1031, 1 << 20))  # F_SETPIPE_SZ
    except OSError as e:
        print("pipe refused", e.errno)''')


def test_memory_outside_the_address_space_limit_is_refused(unguarded: SandboxPool) -> None:
    told = _ok_stdout(unguarded, MEMORY)
    assert "memfd refused 1 after 0 MiB" in told and "pipe refused 1" in told, told


# ---- 8. error text has a bound ----------------------------------------------------------------------------
FORGED_ERROR = FORGE.replace("PAYLOAD", "json.dumps({'ok': False, 'stdout': '', 'error': {'kind': 'runtime', "
                             "'message': 'M' * 3_500_000, 'traceback': 'T' * 400_000}}).encode()")
FORGED_SCENE = FORGE.replace("PAYLOAD", "('{\"ok\": true, \"stdout\": \"\", \"scenes\": [' + "
                             "_scene().model_dump_json()[:-1] + ''.join(f',\"extra{i}\":\"' + 'v' * 60 "
                             "+ '\"' for i in range(4000)) + '}]}').encode()")


def test_a_forged_error_frame_is_cut_with_a_marker(unguarded: SandboxPool) -> None:
    r = _run(unguarded, FORGED_ERROR)
    assert r.error is not None and r.error.kind == "runtime", r.error
    assert len(r.error.message) < 2_100 and r.error.message.startswith("MMM") and "cut]" in r.error.message
    assert len(r.error.traceback) < 8_100 and "cut]" in r.error.traceback


def test_an_invalid_scene_is_summarised(unguarded: SandboxPool) -> None:
    r = _run(unguarded, FORGED_SCENE)
    assert r.error is not None and r.error.kind == "invalid_output", r.error
    assert len(r.error.message) < 2_100, len(r.error.message)
    assert "4000 validation errors" in r.error.message and "extra0" in r.error.message


def test_sandbox_error_truncates_rather_than_fails() -> None:
    err = SandboxError(kind="runtime", message="m" * 1_000_000, traceback="t" * 1_000_000)
    assert len(err.message) < MAX_MESSAGE_CHARS + 50 and err.message.startswith("mmm")
    assert err.message.endswith(f"{1_000_000 - MAX_MESSAGE_CHARS:,} more characters cut]"), err.message[-60:]
    assert len(err.traceback) < MAX_TRACEBACK_CHARS + 50
    assert err.traceback.endswith(f"{1_000_000 - MAX_TRACEBACK_CHARS:,} more characters cut]")


# ---- the filter itself, call by call (a classic-BPF interpreter over the assembled program) -------------
def _verdict(prog: list, nr: int, args: tuple = (), arch: int = 0xC000003E) -> str:
    data = [nr, arch, 0, 0]  # nr, arch, instruction pointer (two words), then the six arguments
    for a in (*args, 0, 0, 0, 0, 0, 0)[:6]:
        data += [a & 0xFFFFFFFF, (a >> 32) & 0xFFFFFFFF]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x20:  # ld [k]
            acc, pc = data[k // 4], pc + 1
        elif code in (0x15, 0x35):  # jeq / jge
            pc += 1 + (jt if (acc == k if code == 0x15 else acc >= k) else jf)
        elif code == 0x05:  # ja
            pc += 1 + k
        else:
            assert code == 0x06, code
            return {0x7FFF0000: "allow", 0x00050001: "EPERM", 0x80000000: "kill"}[k]


def test_the_filter_refuses_each_listed_call_and_allows_the_tasks_own() -> None:
    prog = seccomp.seccomp_program(1)  # the task is pid 1 of its namespace
    for group, numbers in seccomp.DENIED.items():
        for nr in numbers:
            assert _verdict(prog, nr) == "EPERM", (group, nr)
    cases = {  # (nr, args): verdict
        (0, ()): "allow", (1, ()): "allow", (62, (1, 0)): "allow", (62, (2, 9)): "EPERM",  # read write kill
        (124, (0,)): "allow", (124, (4553,)): "EPERM", (121, (7,)): "EPERM",  # getsid getpgid
        (141, (0, 0, 19)): "allow", (141, (0, 77, 19)): "EPERM", (141, (1, 0, 19)): "EPERM",  # setpriority
        (251, (1, 0, 3 << 13)): "allow", (251, (1, 77, 3 << 13)): "EPERM",  # ioprio_set
        (144, (0, 5)): "allow", (144, (77, 5)): "EPERM", (203, (77,)): "EPERM", (314, (77,)): "EPERM",
        (72, (3, 1031, 1 << 20)): "EPERM", (72, (3, 3)): "allow",  # fcntl F_SETPIPE_SZ / F_GETFL
        (302, (0, 7, 0, 1)): "allow", (302, (0, 7, 1 << 32, 0)): "EPERM",  # prlimit64 query / set
        (112, ()): "EPERM", (109, (0, 0)): "EPERM", (0x40000000, ()): "EPERM",  # setsid setpgid x32
    }
    assert {case: _verdict(prog, *case) for case in cases} == cases
    assert _verdict(prog, 0, arch=0x40000003) == "kill"  # i386


# ---- the layers of this round are all in effect here ------------------------------------------------------
def test_each_new_layer_took_effect_on_this_machine(unguarded: SandboxPool) -> None:
    info = unguarded.isolation
    assert info["seccomp"] and info["pidns"] and info["ipcns"] and info["utsns"], info
    assert info["fresh_session"], info


# ---- 10. denials that teach (the Python layers on) --------------------------------------------------------
SAVE_TMP = "import numpy as np\n" + body('''
    print("saving the layout")
    a = np.zeros(3)
    np.save("/tmp/coda_layout.npy", a)''')


def test_a_denial_names_the_operation_and_the_line_and_keeps_stdout(pool: SandboxPool) -> None:
    """An honest mistake — `np.save` to /tmp — used to come back as "the sandbox denied
    'object.__getattr__' (raised while the sandbox checked another operation)", no line, no output."""
    r = pool.run(SAVE_TMP, limits=TEST_LIMITS)
    line = SAVE_TMP.splitlines().index('    np.save("/tmp/coda_layout.npy", a)') + 1
    assert r.error is not None and r.error.kind == "forbidden", r
    assert "'open'" in r.error.message and "/tmp/coda_layout.npy" in r.error.message, r.error.message
    assert "object.__getattr__" not in r.error.message and "scratch" in r.error.message, r.error.message
    assert r.error.line == line and f"(line {line})" in str(r.error), r.error
    assert "np.save" in r.error.traceback, r.error.traceback
    assert r.stdout.startswith("saving the layout"), r.stdout
    assert not os.path.exists("/tmp/coda_layout.npy")
