"""Answers FINDINGS #62's first question: did a loop run train on the layouts LIBERO-Pro's position
perturbation evaluates? A read of the run's own records, no policy and no training.

    python -m studies.libero_layout_audit --run runs/libero_r2 \
        --out docs/results/findings/libero_layout_audit_r2.json

For each task of the run's LIBERO family: where the item the position perturbation moves stands at the
start of every expert demonstration the run kept (`episodes/round_*/demo_*`: every file, a superset of what
its updates trained on), against where it stands in the 50 starts the protocol evaluates under position
(the suite's `_swap` file, init states 0–49, read in that file's own environment). The moved item: on
`libero_object` the task's item, on `libero_spatial` the plate, on `libero_goal` the goal's subject (a
drawer's cabinet: a fixture, whose place neither record holds, so its row has the movable objects' layout,
the demonstrations' `start` of the cabinet and how far the swap file moves it). Distances are on the floor
(x, y), the demonstrations' first recorded state (after LIBERO's settling steps, which move an item by
millimetres) against the evaluation's starts as placed.
Reported per task: the nearest any demonstration's item came to any evaluation start's item (and that
demonstration's `start` / `shift` factors; on `libero_spatial` the plate's), the same for the whole layout
(the farthest object of the nearest pair), and for scale how far the swap moves the item (its own-start
centre in the original file to its centre in the swap file) and how widely the evaluation's own 50 starts
spread.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser

FAMILIES = ("libero_object", "libero_spatial", "libero_goal")


def family_tasks(family: str) -> dict[str, tuple[str, str]]:
    """Per task key of the family (its `TASKS`): (the task file's name, the object LIBERO-Pro's position
    perturbation moves)."""
    if family == "libero_object":
        from sim.families.libero_object.scene import TASKS

        return {k: (row[0], row[1]) for k, row in TASKS.items()}
    if family == "libero_spatial":
        from sim.families.libero_spatial.scene import PLATE, TASKS

        return {k: (row[0], PLATE) for k, row in TASKS.items()}
    if family == "libero_goal":
        from sim.families.libero_goal.scene import TASKS

        return {k: (row[0], row[2][1].split("/")[0]) for k, row in TASKS.items()}  # a drawer: its cabinet
    raise ValueError(f"{family}: not a LIBERO family (choose from {', '.join(FAMILIES)})")


def demonstrations(run: Path, through: int | None = None) -> list[dict[str, Any]]:
    """Every kept demonstration of the run's LIBERO family (the first one its demonstrations are of) of
    rounds up to `through` (all when None): its family, task key, factors and each object's (x, y) at its
    start."""
    out: list[dict[str, Any]] = []
    family, by_name = None, {}
    for meta in sorted(run.glob("episodes/round_*/demo_*.json")):
        rnd = int(meta.parent.name.split("_")[1])
        if through is not None and rnd > through:
            continue
        rec = json.loads(meta.read_text())
        scene = rec["scene"]
        if scene.get("family") not in FAMILIES or family not in (None, scene["family"]):
            continue
        if family is None:
            family = scene["family"]
            by_name = {name: key for key, (name, _) in family_tasks(family).items()}
        with np.load(meta.with_suffix(".npz"), allow_pickle=False) as z:
            pos = z["s_obj_pos"][0]
        names = rec["layout"]["objects"]
        spatial = scene["factors"]["spatial"]
        out.append({"round": rnd, "family": family,
                    "task": by_name[scene["libero"]["task"]],
                    "start": spatial.get("start", spatial.get("plate", "own")),  # spatial: the plate's
                    "shift": spatial.get("shift", "none"),
                    "xy": {n: pos[i, :2] for i, n in enumerate(names)}})
    return out


def evaluated(suite: str, task: str, perturb: str) -> list[dict[str, np.ndarray]]:
    """The (x, y) of every object in init states 0–49 of the task's file under `perturb`."""
    from experiments.liberopro import starts

    return [{n: np.asarray(p)[:2] for n, p in e.positions.items()}
            for e in starts.evaluation_starts(suite, task, perturbs=(perturb,))]


def moved_fixture(suite: str, task: str, name: str, resets: int = 3) -> float:
    """How far (m, on the floor) the position perturbation's file moves fixture `name` from where the
    original file has it. A fixture stands where LIBERO samples it in its BDDL region at each reset (not in
    an init state), so each file's place is the mean over resets with seeds 0..resets−1."""
    from experiments.liberopro.evaluate import tasks
    from sim.libero.env import LiberoEnv

    where = []
    for perturb in ("none", "position"):
        [found] = [t for t in tasks(suite, perturb) if t.name == task and t.usable]
        env = LiberoEnv.for_task(found)
        try:
            placed = []
            for seed in range(resets):
                env.reset(seed=seed)
                placed.append(env.fixture_position(name)[:2])
            where.append(np.mean(placed, axis=0))
        finally:
            env.close()
    return float(np.linalg.norm(where[1] - where[0]))


def audit_task(key: str, demos: list[dict[str, Any]]) -> dict[str, Any]:
    """One task's row (see the module's docstring)."""
    from experiments.liberopro import starts

    family = demos[0]["family"]
    task, item = family_tasks(family)[key]
    mine = [d for d in demos if d["task"] == key]
    if not mine:  # nothing to measure: the task's files are not opened
        return {"task": key, "item": item, "demonstrations": 0}
    swap, own = evaluated(family, task, "position"), evaluated(family, task, "none")
    layout_d = [min(starts.distance(d["xy"], e) for e in swap) for d in mine]  # on the floor: (x, y) only
    j = int(np.argmin(layout_d))
    row = {"task": key, "item": item, "demonstrations": len(mine),
           "by_start": dict(sorted(Counter(d["start"] for d in mine).items())),
           "nearest_layout_m": round(layout_d[j], 3),
           "nearest_layout_demo": {k: mine[j][k] for k in ("round", "start", "shift")}}
    if not all(item in e for e in swap + own) or not all(item in d["xy"] for d in mine):
        # a fixture (a drawer's cabinet): neither a demonstration's record nor the evaluation's object
        # positions hold its place, so the movable objects' layout is measured, the fixture by where the
        # demonstrations started it (`by_start`) and how far the swap file moves it
        moved = moved_fixture(family, task, item)
        return row | {"item_is_fixture": True, "swap_moves_item_m": round(moved, 3)}
    ev_item = np.array([e[item] for e in swap])
    item_d = [float(np.min(np.linalg.norm(ev_item - d["xy"][item], axis=1))) for d in mine]
    i = int(np.argmin(item_d))
    spread = max(float(np.linalg.norm(a - b)) for a in ev_item for b in ev_item)
    moved = float(np.linalg.norm(ev_item.mean(0) - np.array([e[item] for e in own]).mean(0)))
    return row | {"nearest_item_m": round(item_d[i], 3),
                  "nearest_item_demo": {k: mine[i][k] for k in ("round", "start", "shift")},
                  "swap_moves_item_m": round(moved, 3), "evaluated_item_spread_m": round(spread, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_layout_audit", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--through", type=int, default=None, metavar="R",
                    help="only the demonstrations of rounds 0..R (default: every round kept so far)")
    ap.add_argument("--out", type=Path, default=None, help="write the rows here (JSON)")
    a = ap.parse_args(argv)
    demos = demonstrations(a.run, a.through) if a.run.is_dir() else []
    if not demos:
        print(f"error: {a.run}: no demonstrations of a LIBERO family ({', '.join(FAMILIES)}) under "
              "episodes/ (is it a run directory of `agents.run --preset libero`?)", file=sys.stderr)
        return 2
    rows = [audit_task(k, demos) for k in family_tasks(demos[0]["family"])]
    for r in rows:
        if not r["demonstrations"]:
            print(f"{r['task']:18s} demos    0", flush=True)
            continue
        if r.get("item_is_fixture"):
            print(f"{r['task']:18s} demos {r['demonstrations']:4d}  {r['item']} (a fixture) started "
                  f"{r['by_start']}, the swap moves it {100 * r['swap_moves_item_m']:5.1f} cm  nearest "
                  f"layout of the movable objects {100 * r['nearest_layout_m']:5.1f} cm", flush=True)
            continue
        cm = {k: f"{100 * r[k]:5.1f} cm" for k in ("nearest_item_m", "nearest_layout_m", "swap_moves_item_m",
                                                   "evaluated_item_spread_m")}
        print(f"{r['task']:18s} demos {r['demonstrations']:4d}  nearest item {cm['nearest_item_m']} "
              f"({r['nearest_item_demo']['start']}, {r['nearest_item_demo']['shift']})  nearest layout "
              f"{cm['nearest_layout_m']}  swap moves item {cm['swap_moves_item_m']}  "
              f"evaluated item spread {cm['evaluated_item_spread_m']}", flush=True)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"run": a.run.name, "family": demos[0]["family"], "through": a.through,
                                    "demonstrations": len(demos), "tasks": rows},
                                    indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
