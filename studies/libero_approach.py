"""Answers FINDINGS #39. Where a LIBERO-Object policy goes: for development scenes of the loop's family (those
of `studies.libero_loop_sft`, seeds 90,000 + k), the object the end effector came nearest to, beside the item
the words name and the item's first swap partner (whose region the item starts in under `start=swap1`). Never
the protocol's suites.

    python -m studies.libero_approach --policy runs/libero_ab_s34/plain.safetensors --start own --scenes 20

A policy that learned where items usually start, not which item the words name, goes to the partner's
region in own-start scenes (FINDINGS #39). Prints one row per scene and writes `--out` (JSON) when given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count
from studies.libero_loop_sft import DEV_SEED0

FAMILY = "libero_object"


def approach(args: tuple[str, int, int]) -> dict[str, Any]:
    """One development scene (seed) with the policy at `path`: success, and the nearest object over the
    episode (states every 5 steps)."""
    path, seed, max_steps = args
    import numpy as np

    from coda_policy.awr import load_seeded
    from sim.episode import run_episode
    from sim.families import get_family
    from sim.families.libero_object.scene import TASKS

    spec = get_family(FAMILY).sample_scene(seed)
    ep = run_episode(spec, load_seeded(path, 0).bind(spec), max_steps=max_steps, record_every=5)
    names = list(ep.states[0].layout.objects)
    nearest = {n: min(float(np.linalg.norm(s.ee_pos - s.position(n))) for s in ep.states) for n in names}
    task = spec.factors["task"]["task"]
    return {"seed": seed, "task": task, "start": spec.factors["spatial"]["start"],
            "success": bool(ep.success), "item": TASKS[task][1], "partner": TASKS[task][3][0],
            "nearest": min(nearest, key=nearest.get),
            "distance_m": round(min(nearest.values()), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_approach", __doc__)
    ap.add_argument("--policy", type=Path, required=True, help="a saved object-token policy (.safetensors)")
    ap.add_argument("--scenes", type=int, default=20, help=f"development scenes, seeds {DEV_SEED0}, ...")
    ap.add_argument("--start", choices=("own", "swap1", "any"), default="any",
                    help="keep only the scenes whose item starts there")
    ap.add_argument("--max-steps", type=int, default=280)
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.scenes < 1 or a.workers < 1:
        ap.error("--scenes and --workers must be >= 1")
    if not a.policy.is_file():
        print(f"error: no policy file {a.policy}", file=sys.stderr)
        return 2
    from experiments.liberopro.evaluate import spawn_map
    from sim.families import get_family

    fam = get_family(FAMILY)
    seeds = [DEV_SEED0 + i for i in range(a.scenes)
             if a.start == "any" or fam.sample_scene(DEV_SEED0 + i).factors["spatial"]["start"] == a.start]
    rows = list(spawn_map(approach, [(str(a.policy), s, a.max_steps) for s in seeds], a.workers))
    for r in rows:
        print(f"{r['seed']} {r['task']:<18} {r['start']:<6} success={r['success']!s:<5} "
              f"nearest {r['nearest']} ({r['distance_m']} m); item {r['item']}, partner {r['partner']}",
              flush=True)
    count = {k: sum(r["nearest"] == r[k] for r in rows) for k in ("item", "partner")}
    print(f"nearest the item {count['item']}/{len(rows)}, the swap partner {count['partner']}/{len(rows)}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"policy": str(a.policy), "start": a.start, "counts": count,
                                     "scenes": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
