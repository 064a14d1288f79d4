"""Answers FINDINGS #41 and #42. The LIBERO loop's round update, redone at other step sizes: the
advantage-weighted update of one round of a `--preset libero` run, repeated from the run's own files (the
policy the round started from, and the round's rollouts, demonstrations and training programs as its
checkpoint recorded them) with `learn.awr_lr`, `learn.awr_steps` and `learn.round_share` varied, each policy
scored on development scenes of the run's family beside the policy the round started from.

    python -m studies.libero_round_dev --run runs/libero_s37 --rounds 1 --lrs 1e-3,3e-4,1e-4,3e-5 \
        --scenes 40 --workers 2 --out runs/libero_round_dev

Development scenes are `studies.libero_loop_sft`'s (seeds 90,000 on, which no run, suite or generator
draws): half in distribution, half with the family's factors out of distribution (`sample_scene(ood=True)`),
the same scenes and sampling seed for every policy. Never the protocol's suites: the preset's step size is
chosen here, not on the numbers it is reported with.

`--also` scores more checkpoints on the same scenes (a run's later rounds, a fork's; with the same
`--rounds`, the rounds already scored are kept). Results go to
`<out>/results.json` as each policy is scored (a policy already trained is loaded, one already
scored is kept, so a killed run resumes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from common.cli import UsageError, comma_list, command_parser, worker_count
from studies.libero_loop_sft import DEV_SEED0, act, scored


def round_groups(run: Path, round_no: int, round_share: float | None = None
                 ) -> tuple[Any, list[tuple[Any, list[Path]]], Path]:
    """(config, the (training program, episodes) groups the round's update shaped, the policy it started
    from), read from the run's checkpoints: the state the `train` node of round `round_no` was given; with
    `round_share`, the groups as `learn.round_share` at that value would have made them."""
    from agents.graph.nodes.learn import aw_groups
    from agents.graph.rundir import RunDir
    from agents.replay import node_inputs

    cfg, state = node_inputs(run, round_no)
    if round_share is not None:
        cfg = dataclasses.replace(cfg, learn=dataclasses.replace(cfg.learn, round_share=round_share))
    rd = RunDir(run)
    return cfg, aw_groups(argparse.Namespace(run=rd, config=cfg), state), rd.abs(state["policy"])


def dev_job(args: tuple[Any, ...]) -> dict[str, Any]:
    """One development scene: (policy path, family, seed, max_steps, ood)."""
    path, family, seed, max_steps, ood = args
    from sim.families import get_family

    return {**act(path, get_family(family).sample_scene(seed, ood=ood), max_steps), "ood": ood}


def score(eps: list[dict[str, Any]], trained: dict[str, Any]) -> dict[str, Any]:
    """`libero_loop_sft.scored`, with the in- and out-of-distribution halves apart."""
    out = scored(eps, trained)
    for split, ood in (("id", False), ("ood", True)):
        mine = [e["success"] for e in eps if e["ood"] == ood]
        out[split] = f"{sum(mine)}/{len(mine)}"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_round_dev", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--rounds", type=comma_list(int), default=[1], help="rounds whose update to redo (1,2)")
    ap.add_argument("--lrs", type=comma_list(float), default=[1e-3, 3e-4, 1e-4, 3e-5],
                    help="learn.awr_lr values")
    ap.add_argument("--steps", type=comma_list(int), default=None,
                    help="learn.awr_steps values (default: the run's)")
    ap.add_argument("--round-shares", type=comma_list(float), default=None,
                    help="learn.round_share values: the round's own demonstrations' share of the update "
                         "(default: the run's)")
    ap.add_argument("--scenes", type=int, default=40,
                    help=f"development scenes, seeds {DEV_SEED0}, ...: the first half in distribution")
    ap.add_argument("--also", type=comma_list(Path), default=[],
                    help="more checkpoints to score on the same scenes (e.g. a run's later rounds)")
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.scenes < 2 or a.workers < 1 or any(x <= 0 for x in a.lrs) or any(s < 1 for s in a.steps or [1]):
        ap.error("--scenes must be >= 2, --workers >= 1, every lr > 0 and every step count >= 1")
    if any(not 0 <= x < 1 for x in a.round_shares or []):
        ap.error("every --round-shares value must be in [0, 1)")
    if missing := [str(p) for p in a.also if not p.is_file()]:
        ap.error(f"--also: no such checkpoint: {', '.join(missing)}")
    from agents.graph.nodes.work import stable_seed
    from agents.graph.trainer import PolicyTrainer
    from experiments.liberopro.evaluate import spawn_map

    a.out.mkdir(parents=True, exist_ok=True)
    res_path = a.out / "results.json"
    results: dict[str, Any] = json.loads(res_path.read_text()) if res_path.exists() else {}
    setup = {"run": str(a.run), "dev_seeds": [DEV_SEED0, DEV_SEED0 + a.scenes],
             "ood_from": DEV_SEED0 + a.scenes // 2}
    if results and {k: results.get(k) for k in setup} != setup:  # kept scores would be another setup's
        ap.error(f"--out {a.out} holds results of --run {results.get('run')} on development seeds "
                 f"{results.get('dev_seeds')}; give another --out")
    results.update(setup)

    def evaluate(key: str, path: Path, cfg: Any, trained: dict[str, Any]) -> None:
        if key in results:
            print(f"{key}: {results[key]['successes']}/{results[key]['episodes']} (kept)", flush=True)
            return
        half = a.scenes // 2
        jobs = [(str(path), cfg.families[0], DEV_SEED0 + i, cfg.rollout_max_steps, i >= half)
                for i in range(a.scenes)]
        results[key] = score(list(spawn_map(dev_job, jobs, a.workers)), trained)
        r = results[key]
        print(f"{key}: {r['successes']}/{r['episodes']} (ID {r['id']}, OOD {r['ood']})", flush=True)
        res_path.write_text(json.dumps(results, indent=1) + "\n")

    for rn in a.rounds:
        for share in a.round_shares or [None]:
            try:
                cfg, groups, start = round_groups(a.run, rn, share)
            except (UsageError, ValueError) as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            evaluate(f"round{rn}_start", start, cfg, {"policy": str(start)})
            for steps in a.steps or [cfg.learn.awr_steps]:
                for lr in a.lrs:
                    key = f"round{rn}_lr{lr:g}_steps{steps}" + (f"_share{share:g}" if share else "")
                    path = a.out / f"{key}.safetensors"
                    trained: dict[str, Any] = {"loaded": str(path)}
                    if not path.exists():
                        lc = dataclasses.replace(cfg.learn, awr_lr=lr, awr_steps=steps)
                        trained = PolicyTrainer(lc).aw_update(
                            start, groups, path, shaping=cfg.method_config.shaping,
                            seed=stable_seed(cfg.seed, rn, "train"))
                    evaluate(key, path, cfg, trained)
    for path in a.also:
        evaluate(str(path), path, cfg, {"policy": str(path)})  # cfg: the run's (--rounds has one at least)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
