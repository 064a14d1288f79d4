"""How every command-line entry point answers bad input: one or a few lines that say what to do, exit
code 2 for usage (nothing was written), 1 for a run that failed; never a traceback dump.

    def main(argv=None) -> int:
        return run_cli(lambda: _main(argv), log_dir=lambda: Path("runs/x"))

`UsageError` is raised by a command's own checks (all of them done before it writes anything). Any other
exception is a failure of the run: its message is printed on one line and the full traceback goes to a
log file whose path is printed with it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class UsageError(Exception):
    """Bad input to a command: printed as `error: <message>`, exit code 2."""


def command_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of `python -m <module>`: its help opens with the first paragraph of the module's
    docstring, so every command describes itself the same way."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0])


def comma_list(item: Callable[[str], Any] = str,
               choices: Sequence[Any] | None = None) -> Callable[[str], list]:
    """The argparse `type` of a list option: every list argument of every command is one comma-separated
    word (`--families pick_place,push`, `--n 6,12`), each item converted by `item` and, with `choices`,
    checked against them; a bad item is an argparse error naming it."""

    def parse(text: str) -> list:
        out = []
        for raw in (t.strip() for t in text.split(",")):
            if not raw:
                continue
            try:
                value = item(raw)
            except ValueError as e:
                raise argparse.ArgumentTypeError(f"{raw!r} in {text!r}: {e}") from None
            if choices is not None and value not in choices:
                raise argparse.ArgumentTypeError(f"{raw!r} is not one of {', '.join(map(str, choices))}")
            out.append(value)
        if not out:
            raise argparse.ArgumentTypeError(f"{text!r}: need at least one comma-separated item")
        return out

    return parse


def seed_list(text: str) -> list[int]:
    """`--seeds`: "3" → [0, 1, 2]; "0,2" → [0, 2]."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seeds (3) or a list (0,2)") from None
    if not values or min(values) < 0 or ("," not in text and values[0] < 1):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seeds >= 1 or a list of seeds >= 0")
    return values if "," in text else list(range(values[0]))


def worker_count(text: str) -> int:
    """`--workers`: a number of worker processes no larger than this machine runs at once
    (`common.machine.machine_workers`); more would spawn until the machine stalls. Lower bounds (0 or 1)
    are each command's own."""
    from common.machine import available_mb, cpu_count, machine_workers

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers") from None
    if n > (limit := machine_workers()):
        raise argparse.ArgumentTypeError(f"{n}: this machine runs at most {limit} workers ({cpu_count()} "
                                         f"CPUs, {available_mb() // 1024} GiB free); give at most {limit}")
    return n


def _log(exc: BaseException, log_dir: Path | None) -> Path:
    text = "".join(traceback.format_exception(exc))
    if log_dir is not None and log_dir.is_dir():
        try:
            path = log_dir / "error.log"
            with path.open("a") as f:
                f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n{text}")
            return path
        except OSError:
            pass
    fd, name = tempfile.mkstemp(prefix="coda-error-", suffix=".log")
    with open(fd, "w") as f:
        f.write(text)
    return Path(name)


def run_cli(body: Callable[[], int], *, log_dir: Callable[[], Path | None] | None = None,
            hint: Callable[[], str] | None = None) -> int:
    """Run a command's body: `UsageError` → exit 2 with its message; any other exception → exit 1 with
    one line, the traceback in a log file, and `hint()` (e.g. how to resume) when given."""
    try:
        return body()
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        raise
    except SystemExit:
        raise
    except Exception as e:  # a failed run: one line, the traceback on disk
        where = _log(e, log_dir() if log_dir else None)
        first = (str(e).strip().splitlines() or [""])[0][:500]
        print(f"error: {type(e).__name__}: {first}\n(full traceback in {where})", file=sys.stderr)
        if hint is not None and (text := hint()):
            print(text, file=sys.stderr)
        return 1


def console(**kw: Any) -> Any:
    """The `rich` console every command prints through. On a terminal, rich's own; piped or redirected
    (a log file, `| less`), a sentence is never wrapped mid-line (`soft_wrap`) and tables are laid out
    120 columns wide (`$COLUMNS` overrides) instead of rich's 80."""
    import os

    from rich.console import Console

    if sys.stdout.isatty() or "width" in kw:
        return Console(**kw)
    width = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else 120
    return Console(soft_wrap=True, width=width, **kw)

