"""Issue #11: bad input to every command-line tool answers in a few lines that say what to do (exit 2 for
usage), never with a traceback, and never changes a run directory it cannot use (`tests/cli_cases.py`)."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest

from tests.cli_cases import CASES, Case, make_run, prepare, tree_digest


@pytest.fixture(scope="module")
def template_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run directory after its bootstrap; each case damages its own copy."""
    return make_run(tmp_path_factory.mktemp("template") / "run")


def test_every_issue_case_is_listed() -> None:
    assert len(CASES) >= 35 and len({c.id for c in CASES}) == len(CASES)
    assert {c.module for c in CASES} == {"agents.run", "agents.replay", "sandbox.run",
                                         "experiments.table.table1", "studies.bootstrap_cost",
                                         "coda_policy.convert"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_a_short_clear_answer(case: Case, tmp_path: Path, template_run: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    def copy(dst: Path) -> Path:
        shutil.copytree(template_run, dst)
        return dst

    prep = prepare(case, tmp_path, make=copy)
    before = tree_digest(prep.run) if prep.run else ""
    main = importlib.import_module(case.module).main
    try:
        code = main(prep.argv)
    except SystemExit as e:  # argparse's own usage errors
        code = e.code
    out = capsys.readouterr()
    text = (out.err + out.out).strip()
    assert code == case.code, text
    assert case.says in text, text
    assert "Traceback" not in text and len(text.splitlines()) <= 4, text
    if case.unchanged:
        assert prep.run is not None and tree_digest(prep.run) == before, "the run directory was changed"


def test_an_unexpected_failure_is_one_line_with_the_traceback_on_disk(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from common.cli import run_cli

    def boom() -> int:
        raise FileNotFoundError(2, "No such file or directory", "policy/round_01.safetensors")

    assert run_cli(boom, log_dir=lambda: tmp_path, hint=lambda: "continue with: --resume") == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("error: FileNotFoundError:") and "Traceback" not in err
    assert "continue with" in err and "Traceback" in (tmp_path / "error.log").read_text()


def test_a_run_directory_is_written_by_one_run_at_a_time(tmp_path: Path, template_run: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A --resume started while another agents.run still writes the directory is refused and writes
    nothing (two runs interleaving one round's scenes left a checkpoint naming a file the other replaced);
    the lock goes with the run that held it."""
    from agents.run import main
    from agents.run_checks import lock_run
    from common.cli import UsageError

    run = shutil.copytree(template_run, tmp_path / "run")
    before = tree_digest(run)
    with lock_run(run):  # as a running agents.run holds it
        code = main(["--resume", "--rounds", "2", "--out", str(run)])
        text = capsys.readouterr().err.strip()
        with pytest.raises(UsageError, match="another agents.run"), lock_run(run):
            pass
    assert code == 2 and "being written by another agents.run" in text and "--resume" in text, text
    assert "Traceback" not in text and tree_digest(run) == before
    with lock_run(run):  # released with its holder
        pass
