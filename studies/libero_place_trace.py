"""Where does a LIBERO policy put the goal's object? Episodes of a LIBERO-Pro suite run as the protocol runs
them (init state i, seed i, the file's instruction), each traced to its end: was the object lifted, and
where did a lifted one end — at the goal's target where the perturbed file puts it, or where the original
suite's file puts that target at the same init state (its own region)? Under `libero_spatial_swap` the
plate is moved; a policy that carries the bowl to the plate's own region has learned a place, not the
plate.

    python -m studies.libero_place_trace --run runs/libero_sp2 --round 0 --perturb position \
        --episodes 5 --out docs/results/findings/libero_place_trace_sp2_r0_position.json

Episode i repeats the protocol's episode i (same state, same seed), so its success is the evaluation's
(up to thread-count rounding). Tasks whose goal puts an object on or in a place (an object, or a region
such as a stove's cook region or a drawer) are traced; any other goal (open a drawer, turn a knob) is
reported skipped. A reading of the protocol's starts for a diagnosis, as
`studies.libero_target_probe`: no setting is chosen from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser
from studies.libero_target_probe import add_run_args, parse_run

NEARER = ("target", "own", "neither")


def nearer(end: np.ndarray, target: np.ndarray, own: np.ndarray, *, tie_m: float = 0.05) -> str:
    """Which of the two places the object ended nearer: "target" (where the file puts it), "own" (its
    region in the original file), or "neither" when both lie within `tie_m` of each other's distance."""
    d_t, d_o = float(np.linalg.norm(end - target)), float(np.linalg.norm(end - own))
    if abs(d_t - d_o) < tie_m:
        return "neither"
    return "target" if d_t < d_o else "own"


def place(env: Any, name: str) -> np.ndarray | None:
    """Where a goal's target stands on the table (x, y): an object's box centre, or a region's site (a
    stove's cook region, a cabinet's drawer); None for neither."""
    if env.is_object(name):
        return env.box(name).center[:2]
    return env.site_pos(name)[:2] if env.has_site(name) else None


def trace_task(task: Any, own_task: Any, policy: str, episodes: int) -> dict[str, Any]:
    """Up to `episodes` protocol episodes of one task, each traced."""
    from coda_policy.object_token.libero_features import LiberoPolicy
    from experiments.liberopro.evaluate import _LiftWatch, init_states
    from sim.libero.env import LiberoEnv

    env = LiberoEnv.for_task(task)
    try:
        goal = env.goal[0] if env.goal else []
        if len(goal) != 3 or not env.is_object(goal[1]) or place(env, goal[2]) is None:
            return {"task": task.name, "skipped": f"goal {goal}: not an object put on or in a place"}
        subject, target = goal[1], goal[2]
        own_env = LiberoEnv.for_task(own_task)
        states, own_states = init_states(task), init_states(own_task)
        n = min(episodes, len(states), len(own_states))
        try:
            own_xy = []
            for i in range(n):
                own_env.reset(own_states[i], seed=i)
                own_xy.append(place(own_env, target))
        finally:
            own_env.close()
        learned = LiberoPolicy(policy, env, task.instruction)
        rows = []
        for i, state in enumerate(states[:n]):
            env.reset(state, seed=i)
            learned.reset(i)
            lift, done = _LiftWatch(env, subject), False  # "lifted" as the protocol's failure phase reads it
            target_xy = place(env, target)
            while env.steps < task.max_steps and not done:
                env.step(learned.act())
                lift.watch()
                done = env.success()
            end = env.box(subject).center[:2]
            rows.append({"state": i, "success": bool(done), "lifted": lift.lifted,
                         "to_target_m": round(float(np.linalg.norm(end - target_xy)), 3),
                         "to_own_m": round(float(np.linalg.norm(end - own_xy[i])), 3),
                         "target_moved_m": round(float(np.linalg.norm(target_xy - own_xy[i])), 3),
                         "nearer": nearer(end, target_xy, own_xy[i])})
    finally:
        env.close()
    return {"task": task.name, "subject": subject, "target": target, **summary(rows), "rows": rows}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A task's episodes in counts: successes; failures that lifted the object, and where those ended (an
    object never lifted ended where it started, which says nothing of the place)."""
    carried = [r for r in rows if not r["success"] and r["lifted"]]
    return {"episodes": len(rows), "successes": sum(r["success"] for r in rows),
            "failed_lifted": len(carried),
            "failed_nearer": {k: sum(r["nearer"] == k for r in carried) for k in NEARER}}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_place_trace", __doc__)
    add_run_args(ap, perturb="position")
    ap.add_argument("--episodes", type=int, default=5, help="episodes per task, init states 0.. (default 5)")
    ap.add_argument("--out", type=Path, default=None, help="write the rows here (JSON)")
    a, path, suite = parse_run(ap, argv, count="episodes")
    from experiments.liberopro.evaluate import tasks

    own = {t.name: t for t in tasks(suite, "none")}
    rows = []
    for t in tasks(suite, a.perturb):
        if not t.usable or t.name not in own:
            continue
        r = trace_task(t, own[t.name], str(path), a.episodes)
        rows.append(r)
        if "skipped" in r:
            print(f"{t.name}: skipped ({r['skipped']})", flush=True)
            continue
        print(f"{t.name[:60]:60s} {r['successes']}/{r['episodes']}; failed: lifted {r['failed_lifted']}, "
              f"of which ended nearer the {r['target']} {r['failed_nearer']['target']}, its own region "
              f"{r['failed_nearer']['own']}, neither {r['failed_nearer']['neither']}", flush=True)
    traced = [r for r in rows if "skipped" not in r]
    total = {k: sum(r["failed_nearer"][k] for r in traced) for k in NEARER}
    lifted = sum(r["failed_lifted"] for r in traced)
    print(f"all: {sum(r['successes'] for r in traced)}/{sum(r['episodes'] for r in traced)}; failures that "
          f"lifted it {lifted}, of which ended nearer the target {total['target']}, its own region "
          f"{total['own']}, neither {total['neither']}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"run": a.run.name, "suite": suite, "round": a.round,
                                     "perturb": a.perturb, "policy": str(path),
                                     "episodes_per_task": a.episodes, "failed_nearer": total,
                                     "tasks": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
