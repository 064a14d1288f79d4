"""Scene validity per task family in the core and the extended factor space (`sim.extension`): the share of
sampled scenes that generate and pass every check (compile, interpenetration, settling, reachability, the
scripted expert solves it), with the reasons of the rest.

    python -m bench.spaces --n 200 [--families pick_place ...] [--splits id,ood] [--workers 2] [--json F]

Scenes are `family.sample_scene(seed, ood, space)` for seeds 0..n-1; a scene the extension cannot lay out
(no free spot for an extra object) counts as a "generate" failure.
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from common.cli import comma_list, command_parser, worker_count
from common.cli import console as cli_console

SPACES = ("core", "extended")


def check(family: str, space: str, split: str, seed: int) -> str | None:
    """None when the scene is valid, else the failing check's reason ("generate" when it did not build)."""
    from sim.families import get_family
    from sim.validity import check_scene

    try:
        scene = get_family(family).sample_scene(seed, ood=split == "ood", space=space)  # type: ignore[arg-type]
    except ValueError:
        return "generate"
    report = check_scene(scene)
    return None if report.ok else str(report.reason)


def _check(key: tuple[str, str, str, int]) -> str | None:
    return check(*key)


def rates(families: list[str], splits: list[str], n: int, workers: int) -> list[dict]:
    """One row per family, space and split: valid scenes of n, and the reasons of the invalid ones."""
    keys = [(f, sp, split, seed) for f in families for sp in SPACES for split in splits for seed in range(n)]
    if workers:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_check, keys, chunksize=4))
    else:
        results = [_check(k) for k in keys]
    rows = []
    for f in families:
        for sp in SPACES:
            for split in splits:
                got = [r for k, r in zip(keys, results, strict=True) if k[:3] == (f, sp, split)]
                rows.append({"family": f, "space": sp, "split": split, "n": len(got),
                             "valid": sum(r is None for r in got),
                             "reasons": dict(Counter(r for r in got if r is not None))})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("bench.spaces", __doc__)
    for flag, kind, default, what in (
            ("--n", int, 200, "scenes per family, space and split"),
            ("--families", comma_list(), [], "comma-separated task families (default: all of our world)"),
            ("--splits", comma_list(choices=("id", "ood")), ["id"], "id, ood or both"),
            ("--workers", worker_count, 2, "processes (0: this one)"),
            ("--json", Path, None, "also write the rows to this JSON file")):
        ap.add_argument(flag, type=kind, default=default, help=what)
    a = ap.parse_args(argv)
    from rich.table import Table

    from sim.families import our_families

    rows = rates(a.families or list(our_families()), a.splits, a.n, a.workers)
    t = Table(title=f"valid scenes per factor space, {a.n} per family and split")
    for c in ("family", "split", "space", "valid", "invalid: reason × n"):
        t.add_column(c)
    for r in rows:
        why = ", ".join(f"{k} × {v}" for k, v in sorted(r["reasons"].items())) or "-"
        share = f"{r['valid']}/{r['n']} ({100 * r['valid'] / r['n']:.0f}%)"
        t.add_row(r["family"], r["split"], r["space"], share, why)
    cli_console().print(t)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
