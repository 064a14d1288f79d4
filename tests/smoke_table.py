"""The smoke table, run once per test run and shared by the tests that read it (Table 1's, the Ray
executor's, the ablations', and the studies' that read a finished cell): it is the slowest fixture of the
suite. A plugin of the whole suite (`tests/conftest.py`), so tests/experiments/ and tests/studies/ share
one; under pytest-xdist the workers share it too — the first to need it builds it under a file lock in the
run's common temporary folder, the others wait for it and read it."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

# The rows the smoke table runs: the table's machinery is the same for every method, and each of these has a
# reader (zero-shot's own bootstrap, SFT for the Ray test and the scene-coverage study, CoDA and its
# Text2potential row for the ablations and the study). The other rows of Table 1 run end to end in
# tests/agents/test_graph.py (scalar, critic-without-memory, uniform's and learnability's allocation in
# tests/agents/nodes/test_allocate.py) and in the committed tables (`python -m experiments.table --preset
# default`, `--preset core`: domain randomization's generator among them); leaving them out saves ~90 s of
# every test run.
SMOKE_METHODS = ("zero_shot", "sft", "coda_text2potential", "coda")


@pytest.fixture(scope="session")
def smoke_table(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
                ) -> tuple[Path, Path, dict]:
    """The smoke table run once, locally: (cells' run directories, results, the table)."""
    from experiments.table import table1  # here: a plugin of every session, it must not slow collection

    base = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):  # an xdist worker: its basetemp's parent is the run's
        base = base.parent
    tmp = base / "smoke_table"
    out, results, done = tmp / "runs", tmp / "results", tmp / "table.json"
    tmp.mkdir(exist_ok=True)
    with open(base / "smoke_table.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            table = table1.run_table("smoke", list(SMOKE_METHODS), [0], critic="rules", workers=1, out=out,
                                     results=results, commit=False, command="test", log=lambda _: None)
            done.write_text(json.dumps(table))
    return out, results, json.loads(done.read_text())
