"""Normal use of the pool: ok results, determinism, line-mapped tracebacks, scratch files, concurrency,
worker replacement, a clean worker environment, and the CLI's exit codes."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sandbox import SandboxPool, SandboxResult, SandboxTask
from tests.sandbox.conftest import assert_alive
from tests.sandbox.programs import OK_PROGRAM, SCENE, body

ROOT = Path(__file__).resolve().parents[2]


def test_ok_result_is_validated_and_deterministic(pool: SandboxPool) -> None:
    a = pool.run(OK_PROGRAM, factors={"size": 0.025}, seed=5)
    b = pool.run(OK_PROGRAM, factors={"size": 0.025}, seed=5)
    c = pool.run(OK_PROGRAM, factors={"size": 0.025}, seed=6)
    assert a.ok and a.error is None and len(a.scenes) == 1
    assert a.scenes == b.scenes and a.scenes != c.scenes
    assert a.scenes[0].objects[0].size == (0.025, 0.025, 0.025)
    assert 0 < a.duration_s < 5


def test_lists_stdout_and_allowed_language(pool: SandboxPool) -> None:
    source = "from __future__ import annotations\nimport random\nfrom typing import Any\n" + SCENE + '''

class Maker:
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def make(self) -> list[Any]:
        return [_scene(f"lift {i} {random.random():.3f}") for i in range(self.n)]


def generate(rng, n=3, **factors):
    print("making", n, type(rng).__name__)
    return Maker(n).make()
'''
    a, b = pool.run(source, factors={"n": 4}, seed=2), pool.run(source, factors={"n": 4}, seed=2)
    assert a.ok, a.error
    assert len(a.scenes) == 4 and a.scenes == b.scenes  # the `random` module is seeded too
    assert a.stdout == "making 4 Generator\n"


def test_traceback_is_mapped_to_program_lines(pool: SandboxPool) -> None:
    source = ("import numpy as np\n\n\ndef helper(x):\n    return np.sqrt(x) / 0 + undefined_name\n\n\n"
              "def generate(rng, **factors):\n    y = helper(4.0)\n    return y\n")
    result = pool.run(source)
    err = result.error
    assert err is not None and err.kind == "runtime" and err.line == 5
    assert err.message == "NameError: name 'undefined_name' is not defined"
    assert err.traceback == (
        "Traceback (program lines, most recent call last):\n  line 9, in generate\n    y = helper(4.0)\n"
        "  line 5, in helper\n    return np.sqrt(x) / 0 + undefined_name\n"
        "NameError: name 'undefined_name' is not defined")
    assert "sandbox" not in err.traceback and ".py" not in err.traceback  # no sandbox frames leak in


def test_scene_validation_errors_point_at_the_construction(pool: SandboxPool) -> None:
    source = SCENE + ("\n\ndef generate(rng, **factors):\n"
                      "    return ObjectSpec(name='Bad Name', kind='box', category='c', size=(1, 1, 1), "
                      "pos=(0, 0))\n")
    err = pool.run(source).error
    line = 1 + next(i for i, text in enumerate(source.splitlines()) if "Bad Name" in text)
    assert err is not None and err.kind == "runtime" and err.line == line
    assert "ValidationError" in err.message and "name" in err.message


def test_untrusted_text_is_scrubbed(pool: SandboxPool) -> None:
    result = pool.run(body("    print('\\ud800 x')\n    raise ValueError('\\udc00')"))
    assert result.stdout == "? x\n" and result.error.message == "ValueError: ?"
    result.model_dump_json()  # everything can be written back out


def test_invalid_return_values(pool: SandboxPool) -> None:
    assert pool.run(body("    return []")).error.kind == "invalid_output"
    assert pool.run(body("    return [_scene(), 3]")).error.message.endswith("got int at index 1")
    err = pool.run("generate = 3\ndef generate(rng):\n    pass\ngenerate = 4\n").error
    assert err.kind == "invalid_output"


def test_scratch_directory_is_writable_and_removed(pool: SandboxPool) -> None:
    source = "import numpy as np\n" + body(
        "    np.save('a.npy', np.arange(4))\n    assert np.load('a.npy').sum() == 6\n"
        "    np.ones(2).tofile('t.bin')\n    print(np.fromfile('t.bin'))")
    result = pool.run(source)
    assert result.ok, result.error
    assert result.stdout == "[1. 1.]\n"
    assert glob.glob(os.path.join(pool._scratch_root, "task-*")) == []


def test_run_many_keeps_order(pool: SandboxPool) -> None:
    tasks = [SandboxTask(source=OK_PROGRAM, factors={"size": 0.01 * (i + 1)}, seed=i) for i in range(6)]
    results = pool.run_many(tasks)
    sizes = [r.scenes[0].objects[0].size[0] for r in results]
    assert sizes == pytest.approx([0.01 * (i + 1) for i in range(6)])


def _wait_dead(pid: int) -> None:
    """Until the process is gone or a zombie (its pipes are closed by then)."""
    for _ in range(500):
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z":
                return
        except (FileNotFoundError, ProcessLookupError, IndexError):  # reaped between open and read
            return
        time.sleep(0.01)


def test_worker_killed_mid_task_is_reported_and_replaced(pool: SandboxPool) -> None:
    before = set(pool.worker_pids)
    results = []
    thread = threading.Thread(target=lambda: results.append(pool.run(body("    while True:\n        pass"))))
    thread.start()
    time.sleep(0.5)
    busy = [pid for pid in before if pid in pool.worker_pids]
    for pid in busy:  # kill every worker: the busy one loses its task, the idle one is found dead later
        os.kill(pid, signal.SIGKILL)
    for pid in busy:
        _wait_dead(pid)
    thread.join(timeout=30)
    assert results and results[0].error is not None
    assert results[0].error.kind in ("crashed", "timeout")
    assert_alive(pool)
    assert_alive(pool)
    assert not before & set(pool.worker_pids)


def test_worker_environment_is_clean(pool: SandboxPool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODA_TEST_SECRET", "hunter2")
    fresh = SandboxPool(pool.config).start()
    try:
        for pid in fresh.worker_pids:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            names = {e.split(b"=", 1)[0].decode() for e in environ if e}
            assert names <= {"PATH", "LANG", "HOME", "TMPDIR", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                             "MKL_NUM_THREADS", "LC_CTYPE"}
            assert b"hunter2" not in b"".join(environ)
        info = fresh.isolation
        assert {"netns", "seccomp", "drop_privileges"} <= set(info)
    finally:
        fresh.close()


def _cli(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    program = tmp_path / "program.py"
    program.write_text(source)
    return subprocess.run([sys.executable, "-m", "sandbox.run", str(program), "--preset", "smoke", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_cli_exit_codes(tmp_path: Path) -> None:
    ok = _cli(tmp_path, OK_PROGRAM, "--factors", '{"size": 0.04}', "--seed", "3")
    assert ok.returncode == 0, ok.stderr
    result = SandboxResult.model_validate_json(ok.stdout)
    assert result.ok and result.scenes[0].objects[0].size == (0.04, 0.04, 0.04)
    assert result.scenes[0] != SandboxResult.model_validate_json(
        _cli(tmp_path, OK_PROGRAM, "--factors", '{"size": 0.04}', "--seed", "4").stdout).scenes[0]
    failed = _cli(tmp_path, body("    return 1 / 0"))
    assert failed.returncode == 1 and '"kind": "runtime"' in failed.stdout
    rejected = _cli(tmp_path, "import os\n" + body("    pass"))
    assert rejected.returncode == 2 and '"kind": "rejected_import"' in rejected.stdout
