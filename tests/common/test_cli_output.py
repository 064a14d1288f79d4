"""Command-line conventions: one form for list arguments (a comma-separated word, checked item by item),
and output that stays readable when piped."""

from __future__ import annotations

import argparse

import pytest

from common.cli import comma_list


def test_comma_lists_parse_convert_and_refuse_bad_items() -> None:
    ap = argparse.ArgumentParser(prog="x", exit_on_error=False)
    ap.add_argument("--n", type=comma_list(int))
    ap.add_argument("--model", type=comma_list(choices=["a", "b"]))
    assert ap.parse_args(["--n", "6, 12,", "--model", "b"]) == argparse.Namespace(n=[6, 12], model=["b"])
    for bad, why in ((["--n", "6,x"], "'x' in '6,x'"), (["--model", "a,c"], "'c' is not one of a, b"),
                     (["--n", ","], "at least one")):
        with pytest.raises(argparse.ArgumentError, match=why):
            ap.parse_args(bad)


def test_no_command_takes_a_space_separated_list() -> None:
    """Every list option goes through `comma_list` (no `nargs` lists left in the entry points)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    packages = ("agents", "experiments", "studies", "bench", "coda_policy", "sim", "programs", "memory",
                "sandbox", "common")
    offenders = [str(p.relative_to(root)) for pkg in packages
                 for p in (root / pkg).rglob("*.py") if "nargs=" in p.read_text()]
    assert not offenders, offenders


def test_piped_output_keeps_each_sentence_on_one_line() -> None:
    import subprocess
    import sys
    from pathlib import Path

    sentence = "the quick brown fox " * 12
    code = f"from common.cli import console; c = console(); c.print({sentence!r}); print(c.width)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin"}, cwd=Path(__file__).resolve().parents[2])
    lines = done.stdout.splitlines()
    assert lines[0].strip() == sentence.strip() and lines[1] == "120"  # not wrapped at rich's 80 columns
