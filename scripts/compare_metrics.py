"""Compare two runs' metrics.jsonl row by row, ignoring timings (keys ending in `_s`): prints every value
that differs, every key only one side has, and the count of differences; exits 1 when a value differs.

    python scripts/compare_metrics.py runs/a/metrics.jsonl runs/b/metrics.jsonl

Used to show that a refactor left a run's behaviour unchanged (same preset, same seed)."""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def strip(o: Any) -> Any:
    """`o` without timing entries."""
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if not k.endswith("_s")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def diff(x: Any, y: Any, path: str = "") -> int:
    """Print and count the differences between `x` (before) and `y` (after); new keys are listed, not
    counted."""
    if type(x) is not type(y):
        print("type", path, x, y)
        return 1
    if isinstance(x, dict):
        n = 0
        for k in sorted(set(x) | set(y)):
            if k not in y:
                print("only in before:", f"{path}/{k}")
                n += 1
            elif k not in x:
                print("new key:", f"{path}/{k}")
            else:
                n += diff(x[k], y[k], f"{path}/{k}")
        return n
    if isinstance(x, list):
        if len(x) != len(y):
            print("length", path, len(x), len(y))
            return 1
        return sum(diff(u, v, f"{path}[{i}]") for i, (u, v) in enumerate(zip(x, y, strict=True)))
    if x != y and not (isinstance(x, float) and math.isnan(x) and math.isnan(y)):  # NaN: the same "no value"
        print("value", path, x, y)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    rows = []
    for path in argv:
        try:
            with open(path) as f:
                rows.append([strip(json.loads(line)) for line in f if line.strip()])
        except (OSError, json.JSONDecodeError) as e:
            print(f"error: cannot read {path}: {e}", file=sys.stderr)
            return 2
    n = diff(rows[0], rows[1])
    print("differences:", n)
    return 1 if n else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
