"""Issue #11: the sandbox holds when a program wins inside its interpreter.

Three parts:
- the five root causes of the Python-layer escapes, each fixed at its root (programs of our own, written
  for these tests; none repeats `test_hostile.py`);
- the OS boundary on its own: a pool with `python_layers=False` hands programs the real builtins (full
  code execution inside the task, as after any escape), and the Landlock view, the tmpfs quota and the
  out-of-process verdict still hold;
- the result channel: non-finite numbers, absurd nesting, a forged frame followed by a bad exit, and a
  batch in which one hostile task must not cost the others their results.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import PoolConfig, SandboxLimits, SandboxPool
from sandbox.pool import SandboxTask
from sandbox.runtime import AuditPolicy, SandboxViolation
from tests.sandbox.conftest import TEST_LIMITS, assert_alive
from tests.sandbox.programs import FORGE, OK_PROGRAM, body

ROOT = Path(__file__).resolve().parents[2]
NP = "import numpy as np\n"


def _run(pool: SandboxPool, source: str, limits: SandboxLimits = TEST_LIMITS):
    return pool.run(source, seed=0, limits=limits)


# ---- 1. audit-hook re-entrancy ----------------------------------------------------------------------------
def test_a_str_subclass_path_is_denied_without_running_its_methods(pool: SandboxPool) -> None:
    src = NP + body('''
    class P(str):
        def startswith(self, *a):
            print("RAN startswith")
            return True
        def decode(self, *a):
            print("RAN decode")
            return "x"
    np.save(P("x.npy"), np.zeros(2))''')
    r = _run(pool, src)
    assert r.error is not None and r.error.kind == "forbidden", r
    assert "RAN" not in r.stdout
    assert_alive(pool)


def test_events_raised_while_the_hook_runs_are_denied_and_recorded(tmp_path: Path) -> None:
    """Program code that runs inside the hook's own check (a collected generator's `finally`, a `__del__`)
    raises its events while the hook is busy: they used to be waved through; now they are denied."""
    read, write = os.pipe()
    policy = AuditPolicy(str(tmp_path), report_fd=write)
    policy.arm(object())
    policy._busy = True  # as during the check of another event
    with pytest.raises(SandboxViolation):
        policy("exec", (compile("1", "<pickle>", "exec"),))
    policy("sys._getframe", ())  # the hook's own frame walk stays allowed
    policy._busy = False
    assert len(policy.denials) == 1 and "exec" in policy.denials[0][0]
    os.close(write)
    reported = os.read(read, 4096).decode()
    os.close(read)
    assert "exec" in reported  # written out at once, where the program cannot take it back


# ---- 2. attribute names must be exact str -----------------------------------------------------------------
def test_a_str_subclass_attribute_name_cannot_pass_the_guard(pool: SandboxPool) -> None:
    src = body('''
    class S(str):
        def startswith(self, *a):
            return False
    g = getattr(print, S("__globals__"))
    print("GOT", len(g))''')
    r = _run(pool, src)
    assert r.error is not None and r.error.kind == "forbidden", r
    assert "GOT" not in r.stdout


# ---- 3. no metatypes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("expr", ["type(type(0))", "type(int)", "type(np.ndarray)"])
def test_type_of_a_class_is_refused(pool: SandboxPool, expr: str) -> None:
    src = NP + body(f'''
    T = {expr}
    X = T("X", (), {{"__array_interface__": {{"data": (0, False), "shape": (8,), "typestr": "<u8"}}}})
    print("DEFINED", X)''')
    r = _run(pool, src)
    assert r.error is not None and r.error.kind == "runtime", r
    assert "type() of a class is not available" in r.error.message and "DEFINED" not in r.stdout


# ---- 4. no arrays over a caller's buffer ------------------------------------------------------------------
@pytest.mark.parametrize(("code", "kind"), [
    ("np.ndarray((1,), dtype=object, buffer=bytearray(8))", "runtime"),
    ("np.ndarray((1,), object, bytearray(8))", "runtime"),
    ("type(np.zeros(1))((1,), object, bytearray(8))", "runtime"),
    ("np.recarray((1,), dtype=[('a', 'O')], buf=bytearray(8))", "runtime"),
])
def test_object_arrays_over_raw_buffers_are_refused(pool: SandboxPool, code: str, kind: str) -> None:
    r = _run(pool, NP + body(f"    a = {code}\n    print('MADE', a.dtype)"))
    assert r.error is not None and r.error.kind == kind, r
    assert "is not available" in r.error.message and "MADE" not in r.stdout


def test_from_numpy_import_ndarray_is_refused_with_a_hint(pool: SandboxPool) -> None:
    r = _run(pool, "from numpy import ndarray\n" + body("    pass"))
    assert r.error is not None and r.error.kind == "rejected_import" and "numpy.ndarray" in r.error.message


def test_honest_array_code_still_works(pool: SandboxPool) -> None:
    src = NP + body('''
    a = np.zeros(3)
    assert isinstance(a, np.ndarray) and type(a) is np.ndarray and issubclass(type(a), np.ndarray)
    b = np.ndarray((2,), dtype=float)
    assert isinstance(b, np.ndarray) and b.shape == (2,)
    c = np.resize(a, 6)
    assert c.shape == (6,)''')
    r = _run(pool, src)
    assert r.ok, r.error


# ---- 5. `**` literals and dynamic keywords ----------------------------------------------------------------
@pytest.mark.parametrize(("code", "kind"), [
    ("    np.zeros(4).resize(8, **{'refcheck': False})", "rejected_code"),
    ("    k = 'refcheck'\n    np.zeros(4).resize(8, **{k: False})", "rejected_code"),
    ("    d = dict(refcheck=False)\n    np.zeros(4).resize(8, **d)", "rejected_code"),
    ("    d = {'ref' + 'check': False}\n    np.zeros(4).resize(8, **d)", "forbidden"),
    ("    class M:\n        pass\n    class X(**{'metaclass': M}):\n        pass", "rejected_code"),
    ("    kw = {}\n    class X(**kw):\n        pass", "rejected_code"),
])
def test_keyword_escapes_are_refused(pool: SandboxPool, code: str, kind: str) -> None:
    r = _run(pool, NP + body(code))
    assert r.error is not None and r.error.kind == kind, r


# ---- the OS boundary alone: full code execution inside the task -------------------------------------------
BOUNDARY_LIMITS = SandboxLimits(cpu_s=2, wall_s=6, memory_mb=256, max_file_bytes=2_000_000,
                                max_scratch_bytes=4_000_000, max_scratch_files=32)


@pytest.fixture(scope="module")
def unguarded() -> Iterator[SandboxPool]:
    """Programs get the real builtins and no static check or audit hook: only the OS layers stand."""
    with SandboxPool(PoolConfig(workers=1, limits=BOUNDARY_LIMITS, python_layers=False)) as p:
        yield p


@pytest.fixture(scope="module")
def outside() -> Iterator[Path]:
    """A world-readable 'other run' outside the sandbox: only Landlock, not file permissions, hides it."""
    d = Path(tempfile.mkdtemp(prefix="coda-other-run-", dir="/tmp"))
    d.chmod(0o755)
    (d / "config.json").write_text('{"secret": "other-run"}')
    (d / "config.json").chmod(0o644)
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


def test_the_unguarded_pool_really_runs_programs_with_full_python(unguarded: SandboxPool) -> None:
    r = _run(unguarded, "import os, sys\n" + body("    print('PID', os.getpid(), len(sys.modules))"),
             BOUNDARY_LIMITS)
    assert r.ok and r.stdout.startswith("PID"), r.error
    info = unguarded.isolation
    assert info["landlock"] >= 1 and info["scratch_quota"] and info["seccomp"]


def test_files_outside_the_view_cannot_be_read(unguarded: SandboxPool, outside: Path) -> None:
    paths = ["/etc/passwd", "/etc/hostname", str(ROOT / "README.md"), str(ROOT / "pyproject.toml"),
             str(outside / "config.json")]
    src = "import os\n" + body(f'''
    out = []
    for p in {paths!r}:
        try:
            out.append(p + " READ " + open(p).read(40))
        except OSError as e:
            out.append(p + " denied " + str(e.errno))
    print("|".join(out))''')
    r = _run(unguarded, src, BOUNDARY_LIMITS)
    assert r.ok, r.error
    assert " READ " not in r.stdout and r.stdout.count("denied 13") == len(paths), r.stdout
    assert (outside / "config.json").read_text().startswith('{"secret"')  # readable outside the sandbox


def test_nothing_can_be_written_outside_scratch(unguarded: SandboxPool) -> None:
    markers = [f"/tmp/coda_boundary_{os.getpid()}", f"/dev/shm/coda_boundary_{os.getpid()}",
               str(ROOT / f"coda_boundary_{os.getpid()}")]
    src = "import os\n" + body(f'''
    for p in {markers!r}:
        try:
            open(p, "w").write("x")
            print("WROTE", p)
        except OSError as e:
            print("denied", e.errno)
    open("inside.txt", "w").write("scratch is writable")
    print(open("inside.txt").read())''')
    r = _run(unguarded, src, BOUNDARY_LIMITS)
    assert r.ok, r.error
    assert "WROTE" not in r.stdout and "scratch is writable" in r.stdout
    assert not any(os.path.exists(m) for m in markers)


def test_the_scratch_quota_bounds_bytes_and_files(unguarded: SandboxPool) -> None:
    src = "import os\n" + body('''
    n = 0
    try:
        for i in range(20):
            with open(f"big{i}", "wb") as f:
                f.write(b"0" * 1_000_000)
            n += 1
    except OSError as e:
        print("bytes stopped at", n, "MB errno", e.errno)
    for i in range(20):
        os.remove(f"big{i}") if os.path.exists(f"big{i}") else None
    k = 0
    try:
        for i in range(1000):
            open(f"f{i}", "w").close()
            k += 1
    except OSError as e:
        print("files stopped at", k, "errno", e.errno)''')
    r = _run(unguarded, src, BOUNDARY_LIMITS)
    assert r.ok, r.error
    lines = dict(line.split(" stopped at ") for line in r.stdout.splitlines() if "stopped at" in line)
    assert int(lines["bytes"].split()[0]) < 5 and "errno 28" in lines["bytes"]  # ENOSPC at the 4 MB quota
    assert int(lines["files"].split()[0]) < 32 and "errno 28" in lines["files"]


def test_a_forged_frame_then_a_bad_exit_is_not_ok(unguarded: SandboxPool) -> None:
    """The program writes a valid-looking ok frame on every descriptor, then exits with status 3."""
    frame = "('{\"ok\": true, \"stdout\": \"\", \"scenes\": [' + _scene().model_dump_json() + ']}').encode()"
    src = FORGE.replace("PAYLOAD", frame).replace("os._exit(0)", "os._exit(3)")
    r = _run(unguarded, src, BOUNDARY_LIMITS)
    assert r.error is not None and r.error.kind == "crashed" and "status 3" in r.error.message, r
    assert_alive(unguarded)


def test_a_recorded_denial_cannot_be_taken_back(unguarded: SandboxPool) -> None:
    """The hook writes each denial to a pipe the worker reads after the task; a program that has won
    inside the process (simulated: it writes the denial line itself, as the hook would have) and then
    returns a perfectly valid scene still comes back forbidden."""
    src = "import os\n" + body('''
    for fd in range(3, 64):
        try:
            if not os.get_blocking(fd):
                os.write(fd, b"7\\tthe sandbox denied 'open' on '/etc/passwd'\\n")
        except OSError:
            pass''')
    r = _run(unguarded, src, BOUNDARY_LIMITS)
    assert r.error is not None and r.error.kind == "forbidden" and "/etc/passwd" in r.error.message, r


# ---- the result channel -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("payload", "needle"), [
    ("'{\"ok\": true, \"stdout\": \"\", \"scenes\": [' + _scene().model_dump_json().replace("
     "'\"yaw\":0.0', '\"yaw\":NaN') + ']}'", "non-finite"),
    ("'{\"ok\": true, \"scenes\": ' + '[' * 200000 + ']' * 200000 + '}'", "nested"),
    ("'{\"ok\": true, \"scenes\": [' + _scene().model_dump_json().replace("
     "'\"max_steps\":300', '\"max_steps\":' + '9' * 1000) + ']}'", "max_steps"),
])
def test_forged_results_are_refused(unguarded: SandboxPool, payload: str, needle: str) -> None:
    src = FORGE.replace("PAYLOAD", f"({payload}).encode()")
    r = _run(unguarded, src, BOUNDARY_LIMITS)
    assert r.error is not None and r.error.kind == "invalid_output", r
    assert needle in r.error.message.lower() or needle in r.error.message, r.error.message


def test_one_hostile_task_never_costs_the_batch_its_results(unguarded: SandboxPool) -> None:
    deep = FORGE.replace("PAYLOAD", "('{\"ok\": true, \"scenes\": ' + '[' * 200000 + ']' * 200000 + '}')"
                         ".encode()")
    tasks = [SandboxTask(source=OK_PROGRAM, factors={"size": 0.03}, seed=1),
             SandboxTask(source=deep, limits=BOUNDARY_LIMITS),
             SandboxTask(source=OK_PROGRAM, factors={"size": 0.04}, seed=2)]
    results = unguarded.run_many(tasks)
    assert [r.ok for r in results] == [True, False, True]
    assert results[0].scenes[0].objects[0].size[0] == 0.03 and results[2].scenes[0].objects[0].size[0] == 0.04


def test_a_patched_serializer_changes_nothing(pool: SandboxPool) -> None:
    """`SceneSpec.model_dump_json` patched through an alias to answer absurdly deep JSON: the scenes are
    written by the serializer the worker captured before the program ran."""
    src = body('''
    S = SceneSpec
    S.model_dump_json = lambda self, **kw: "[" * 100000 + "]" * 100000''')
    r = _run(pool, src)
    assert r.ok, r.error
    assert r.scenes[0].instruction == "lift the cube"
