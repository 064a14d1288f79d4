"""The smoke table, run once per test session and shared by the tests that read it (Table 1's, the Ray
executor's, the ablations', and the studies' that read a finished cell): it is the slowest fixture of the
suite. A plugin of the whole suite (`tests/conftest.py`), so tests/experiments/ and tests/studies/ share
one."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smoke_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The smoke table run once here, locally: (cells' run directories, results, the table)."""
    from experiments.table import table1  # here: a plugin of every session, it must not slow collection

    tmp = tmp_path_factory.mktemp("table1")
    out, results = tmp / "runs", tmp / "results"
    table = table1.run_table("smoke", table1.TABLE_METHODS, [0], critic="rules", workers=1, out=out,
                             results=results, commit=False, command="test", log=lambda _: None)
    return out, results, table


