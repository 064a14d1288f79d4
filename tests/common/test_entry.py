"""`coda COMMAND ...` is `python -m MODULE ...`: every command's module has a `main(argv)`, a typo gets a
suggestion and exit 2, and the installed console script runs."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from common import entry

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_reaches_a_main():
    for name, (module, _) in entry.COMMANDS.items():
        assert callable(getattr(importlib.import_module(module), "main", None)), name


def test_help_and_typos(capsys: pytest.CaptureFixture[str]):
    assert entry.main(["--help"]) == 0 and "table1" in capsys.readouterr().out
    assert entry.main([]) == 2
    assert entry.main(["tabel1"]) == 2
    assert "did you mean 'table1'?" in capsys.readouterr().err


def test_a_command_is_its_module(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as done:
        entry.main(["replay", "--help"])
    assert done.value.code == 0 and "--fork" in capsys.readouterr().out
    assert entry.main(["table1", "--preset", "smok"]) == 2  # the module's own exit code for bad input


def test_the_console_script_is_installed():
    script = Path(sys.executable).parent / "coda"
    exe = str(script) if script.exists() else shutil.which("coda")
    assert exe, "no `coda` console script: run scripts/setup.sh (pip install -e .)"
    done = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0 and "critic-replay" in done.stdout
