"""`--workers` refuses what the machine cannot run (`common.machine`, `common.cli.worker_count`): every
command with the flag parses it with `worker_count`, so `--workers 100000` is an argparse error (exit 2)
instead of spawning until the machine stalls."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from common.cli import worker_count
from common.machine import WORKER_MB, available_mb, cpu_count, machine_workers

ROOT = Path(__file__).resolve().parents[2]


def test_the_machine_limit_is_per_cpu_and_by_memory():
    n = machine_workers()
    assert 1 <= n <= 4 * cpu_count() and (n == 1 or n <= available_mb() // WORKER_MB)


def test_worker_count_takes_what_fits_and_refuses_the_rest():
    assert worker_count("0") == 0 and worker_count(str(machine_workers())) == machine_workers()
    with pytest.raises(argparse.ArgumentTypeError, match=r"100000: this machine runs at most \d+ workers"):
        worker_count("100000")
    with pytest.raises(argparse.ArgumentTypeError, match="not a number"):
        worker_count("many")


def test_every_workers_flag_is_parsed_by_worker_count():
    """Every `add_argument("--workers", ...)` outside agents.run (whose executor preflight refuses it, for a
    config file's workers too) has `type=worker_count`."""
    plain = []
    code = [d for d in ROOT.iterdir() if d.is_dir() and (d / "__init__.py").is_file() and d.name != "tests"]
    for path in sorted(p for d in code for p in d.rglob("*.py")):
        if path == ROOT / "agents/run.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "--workers"):
                kind = next((k.value for k in node.keywords if k.arg == "type"), None)
                if not (isinstance(kind, ast.Name) and kind.id == "worker_count"):
                    plain.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not plain, f"--workers without type=worker_count: {plain}"
