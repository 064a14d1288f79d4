"""CLI: run one generation program in the sandbox and print the JSON result.

    python -m sandbox.run PROGRAM.py [--factors JSON] [--seed N] [--preset default|smoke]

Exit status: 0 ok, 1 the program failed while running, 2 it was rejected before running
(syntax, import or AST check).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sandbox.config import get_preset
from sandbox.policy import check_source
from sandbox.pool import SandboxPool
from sandbox.results import SandboxResult


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.run", description=__doc__.splitlines()[0])
    parser.add_argument("program", type=Path, help="Python source defining generate(rng, **factors)")
    parser.add_argument("--factors", default="{}", help="JSON object of keyword arguments for generate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the rng passed to generate")
    parser.add_argument("--preset", default="default", help="pool preset (default, smoke)")
    args = parser.parse_args(argv)
    factors = json.loads(args.factors)
    if not isinstance(factors, dict):
        parser.error("--factors must be a JSON object")
    source = args.program.read_text(encoding="utf-8")
    config = get_preset(args.preset)
    result: SandboxResult
    if (error := check_source(source, max_source_bytes=config.limits.max_source_bytes)) is not None:
        result = SandboxResult(error=error)  # rejected before running: no worker needed
    else:
        with SandboxPool(config) as pool:
            result = pool.run(source, factors=factors, seed=args.seed)
    print(result.model_dump_json(indent=2))
    return result.exit_code()


if __name__ == "__main__":
    sys.exit(main())
