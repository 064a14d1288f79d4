"""The quickstart's round update, redone with other settings: the advantage-weighted update of round 1 of
`python -m agents.run --preset quickstart`, repeated from the run's own files (`studies.libero_round_dev.
round_groups`: the policy the round started from and the episodes its update shaped) with `learn.awr_lr`
and `learn.awr_rollouts` varied, each policy scored on development scenes of pick-place beside the policy
the round started from.

    python -m studies.quickstart_round_dev --run runs/quickstart --lrs 1e-3,1e-4 --rollouts all,success \
        --scenes 24 --workers 2 --out runs/quickstart_round_dev

Development scenes: seeds 90,000 on (`studies.libero_loop_sft.DEV_SEED0`, which no run, suite or generator
draws), the first half in distribution, the rest out of it; never the run's held-out scenes, which the
quickstart's test reads. Results go to `<out>/results.json` as each policy is scored (kept on a rerun).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from common.cli import comma_list, command_parser, worker_count
from studies.libero_loop_sft import DEV_SEED0
from studies.libero_round_dev import round_groups


def dev_job(args: tuple[str, str, int, int | None, bool]) -> dict[str, Any]:
    """One development episode of the checkpoint at `path` (seeded as the run's evaluation is)."""
    from coda_policy.awr import SeededPolicy
    from sim.families import get_family
    from sim.jobs import EpisodeJob, run_job

    path, family, seed, max_steps, ood = args
    job = EpisodeJob(scene=get_family(family).sample_scene(seed, ood=ood), policy=SeededPolicy(path, 0),
                     max_steps=max_steps)
    r = run_job(0, job)
    if r.error is not None:
        raise RuntimeError(f"development episode {seed} of {path} failed: {r.error}")
    return {"seed": seed, "ood": ood, "success": r.success, "phase": r.failing_phase}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.quickstart_round_dev", __doc__)
    ap.add_argument("--run", type=Path, required=True,
                    help="a run directory of `agents.run --preset quickstart`")
    ap.add_argument("--lrs", type=comma_list(float), default=[1e-3, 1e-4], help="learn.awr_lr values")
    ap.add_argument("--rollouts", type=comma_list(str), default=["all"],
                    help="learn.awr_rollouts values: which rollout chunks the update imitates (\"success\" "
                         "only where the run's learn.awr_demo_fraction < 1)")
    ap.add_argument("--scenes", type=int, default=24, help=f"development scenes, seeds {DEV_SEED0}, ...")
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a: argparse.Namespace = ap.parse_args(argv)
    if a.scenes < 2 or any(x <= 0 for x in a.lrs) or not set(a.rollouts) <= {"all", "success"}:
        ap.error("--scenes must be >= 2, every lr > 0, every --rollouts value all or success")
    from agents.graph.nodes.work import stable_seed
    from agents.graph.trainer import PolicyTrainer
    from experiments.liberopro.evaluate import spawn_map

    a.out.mkdir(parents=True, exist_ok=True)
    res_path = a.out / "results.json"
    results: dict[str, Any] = json.loads(res_path.read_text()) if res_path.exists() else {}
    results["setup"] = {"run": str(a.run), "dev_seeds": [DEV_SEED0, DEV_SEED0 + a.scenes],
                        "ood_from": DEV_SEED0 + a.scenes // 2}
    cfg, groups, start = round_groups(a.run, 1)
    try:  # every update's settings, checked by LearnConfig before any scene is played
        learn = {(r, lr): dataclasses.replace(cfg.learn, awr_lr=lr, awr_rollouts=r)
                 for r in a.rollouts for lr in a.lrs}
    except ValueError as e:
        ap.error(f"{a.run}: {e}")
    half = a.scenes // 2

    def evaluate(key: str, path: Path, trained: dict[str, Any]) -> None:
        if key not in results:
            eps = list(spawn_map(dev_job, [(str(path), cfg.families[0], DEV_SEED0 + i, cfg.rollout_max_steps,
                                            i >= half) for i in range(a.scenes)], a.workers))
            results[key] = {"id": sum(e["success"] for e in eps if not e["ood"]),
                            "ood": sum(e["success"] for e in eps if e["ood"]), "of": half,
                            "update": {k: v for k, v in trained.items() if k in ("update_lr", "backtracks",
                                                                                   "check_loss", "policy")}}
            res_path.write_text(json.dumps(results, indent=1) + "\n")
        r = results[key]
        print(f"{key}: ID {r['id']}/{r['of']}, OOD {r['ood']}/{a.scenes - r['of']}", flush=True)

    evaluate("start", start, {"policy": str(start)})
    for rollouts in a.rollouts:
        for lr in a.lrs:
            key = f"lr{lr:g}_rollouts_{rollouts}"
            path = a.out / f"{key}.safetensors"
            trained = {} if path.exists() else PolicyTrainer(learn[rollouts, lr]).aw_update(
                start, groups, path, shaping=cfg.method_config.shaping,
                seed=stable_seed(cfg.seed, 1, "train"))
            evaluate(key, path, trained)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
