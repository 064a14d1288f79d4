"""CLI: run one generation program in the sandbox and print the JSON result.

    python -m sandbox.run PROGRAM.py [--factors JSON] [--seed N] [--preset default|smoke]

Exit status: 0 ok, 1 the program failed while running, 2 it was rejected before running
(syntax, import or AST check) or the command's input is unusable (a missing or binary file, bad --factors,
an unknown preset; one line says what to do).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.cli import UsageError, command_parser, run_cli
from sandbox.config import get_preset
from sandbox.policy import check_source
from sandbox.pool import SandboxPool, SandboxUnavailable
from sandbox.results import SandboxResult


def _read_program(path: Path) -> str:
    if not path.exists():
        raise UsageError(f"no program at {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory; give a .py file defining generate(rng, **factors)")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text (a binary?); give a Python source file") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def _main(args: argparse.Namespace) -> int:
    try:
        factors = json.loads(args.factors)
    except json.JSONDecodeError as e:
        raise UsageError(f"--factors is not JSON ({e}); e.g. --factors '{{\"size\": 0.03}}'") from None
    if not isinstance(factors, dict):
        raise UsageError("--factors must be a JSON object, e.g. '{\"size\": 0.03}'")
    try:
        config = get_preset(args.preset)
    except KeyError as e:
        raise UsageError(str(e).strip("'\"")) from None
    source = _read_program(args.program)
    result: SandboxResult
    if (error := check_source(source, max_source_bytes=config.limits.max_source_bytes)) is not None:
        result = SandboxResult(error=error)  # rejected before running: no worker needed
    else:
        try:
            with SandboxPool(config) as pool:
                result = pool.run(source, factors=factors, seed=args.seed)
        except SandboxUnavailable as e:
            raise UsageError(str(e)) from None
    print(result.model_dump_json(indent=2))
    return result.exit_code()


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("sandbox.run", __doc__)
    parser.add_argument("program", type=Path, help="Python source defining generate(rng, **factors)")
    parser.add_argument("--factors", default="{}", help="JSON object of keyword arguments for generate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the rng passed to generate")
    parser.add_argument("--preset", default="default", help="pool preset (default, smoke)")
    args = parser.parse_args(argv)
    return run_cli(lambda: _main(args))


if __name__ == "__main__":
    sys.exit(main())
