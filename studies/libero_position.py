"""Answers FINDINGS #55 (issue #41: why the LIBERO loop's rounds do not move position). If a round held many
scenes with the item swapped into another's region, would its update learn them? An oracle for the round:
the update of one round of a `--preset libero` run redone from the run's own files (the policy the round
started from, its rollouts, demonstrations and training programs: `studies.libero_round_dev.round_groups`),
once as the run had it and once with `--demos` new DART demonstrations added beside them, the item starting
in its second or third swap partner's region (`swap2`, `swap3`: layouts the family's `ood` split draws,
never LIBERO-Pro's own partner), each at the run's step count and at more. The new demonstrations join the
update as a round's own do (shaped by the family's seed training program, at `learn.round_share`). With
`--sft`, also the run's bootstrap recipe from scratch on its seed demonstrations and the new ones: whether
the policy learns the layouts from this much data at all, outside a round's update; with `--then-round`,
that retrained policy then given the round's weighted update with the new demonstrations (at each
`--steps`): does a round that retrains and then weighs keep what the retraining learned?

    python -m studies.libero_position --run runs/libero_t1 --demos 64 --steps 60,600 --workers 1 \
        --out runs/libero_position

Every policy acts in the same development scenes (seeds 90,000 + 100 i + j, `studies.libero_loop_sft`'s
range, never a protocol suite) with the same sampling seed: each task with the item in its own region,
in `swap2` (a layout the new demonstrations show, other scene seeds) and in `swap4` (a partner no
demonstration and no LIBERO-Pro file uses: the held-out kind of position change). Demonstrations,
policies and `<out>/results.json` land as they finish; a rerun keeps them.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from common.cli import UsageError, comma_list, command_parser, worker_count

FAMILY = "libero_object"
DEMO_STARTS = ("swap2", "swap3")
EVAL_STARTS = ("own", "swap2", "swap4")
DEMO_SEED0 = 82_000  # past studies.libero_layouts' 80,000 + k, before its 85,000 (`own`) and the dev scenes


def with_swaps(groups: list[tuple[Any, list[Path]]], seed_program: Any, new: list[Path], share: float,
               replayed: int) -> list[tuple[Any, list[Path]]]:
    """The round's update groups with `new` demonstrations added to the seed training program's group (a
    group of its own when the round has none), repeated as `learn.round_share` repeats a round's own."""
    from agents.graph.nodes.learn import round_repeat

    extra = list(new) * round_repeat(share, len(new), replayed)
    out = [(tp, list(eps) + extra if tp == seed_program else list(eps)) for tp, eps in groups]
    if not any(tp == seed_program for tp, _ in groups):
        out.append((seed_program, extra))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_position", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--round", type=int, default=1, help="the round whose update to redo (default 1)")
    ap.add_argument("--demos", type=int, default=64, help="new swapped-start demonstrations to add")
    ap.add_argument("--steps", type=comma_list(int), default=[60, 600],
                    help="learn.awr_steps values (the preset's 60, and more)")
    ap.add_argument("--sft", action="store_true",
                    help="also the run's bootstrap SFT from scratch on its seed demonstrations and the new "
                         "ones (can the policy learn the layouts from this much data at all?)")
    ap.add_argument("--then-round", action="store_true",
                    help="with --sft: the retrained policy then given the round's weighted update (with the "
                         "new demonstrations) at each --steps")
    ap.add_argument("--per-task", type=int, default=2, help="development scenes per task and start")
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.demos < 1 or a.per_task < 1 or a.round < 1 or any(s < 1 for s in a.steps):
        ap.error("--demos, --per-task, --round and every --steps value must be >= 1")
    if a.then_round and not a.sft:
        ap.error("--then-round updates the --sft policy: give --sft too")
    from agents.graph.nodes.arms import load_program, seed_programs
    from agents.graph.nodes.learn import aw_groups
    from agents.graph.nodes.work import stable_seed
    from agents.graph.rundir import RunDir
    from agents.graph.trainer import PolicyTrainer
    from agents.replay import node_inputs
    from studies.libero_layouts import DevResults, collect, starts
    from studies.libero_loop_sft import DEV_SEED0

    try:
        cfg, state = node_inputs(a.run, a.round)
    except (UsageError, ValueError, FileNotFoundError) as e:
        print(f"error: {e} (give a run directory of `agents.run --preset libero` with round {a.round})",
              file=sys.stderr)
        return 2
    if tuple(cfg.families) != (FAMILY,):
        print(f"error: {a.run} ran {list(cfg.families)}, not [{FAMILY!r}]", file=sys.stderr)
        return 2
    deps = argparse.Namespace(run=RunDir(a.run), config=cfg)  # the two fields program lookups read
    groups, start = aw_groups(deps, state), deps.run.abs(state["policy"])
    setup = {"run": str(a.run), "round": a.round, "dev_seeds_from": DEV_SEED0,
             "eval_starts": list(EVAL_STARTS), "per_task": a.per_task}
    dev = DevResults(a.out, setup, ap.error, EVAL_STARTS, a.per_task, cfg.rollout_max_steps, a.workers)
    results, evaluate = dev.results, dev.evaluate

    evaluate("start", start, {"policy": str(start)})
    new, tried = collect(a.demos, starts(DEMO_STARTS), DEMO_SEED0, a.out / "demos", a.workers)
    results["new_demos"] = {"kept": len(new), "scenes": tried, "starts": list(DEMO_STARTS)}
    seed_tp = load_program(deps, seed_programs(deps, FAMILY)[1])
    replayed = sum(len(d) for d in state.get("demo_history", {}).values())
    arms = {"round": groups, f"swap{a.demos}": with_swaps(groups, seed_tp, new, cfg.learn.round_share,
                                                          replayed)}

    def weighted(src: Path, key: str, arm_groups: list[tuple[Any, list[Path]]], steps: int) -> None:
        path = a.out / f"{key}.safetensors"
        trained: dict[str, Any] = {"loaded": str(path)}
        if not path.exists():
            lc = dataclasses.replace(cfg.learn, awr_steps=steps)
            trained = PolicyTrainer(lc).aw_update(src, arm_groups, path, shaping=cfg.method_config.shaping,
                                                  seed=stable_seed(cfg.seed, a.round, "train"))
        evaluate(key, path, trained)

    for steps in a.steps:
        for arm, arm_groups in arms.items():
            weighted(start, f"{arm}_steps{steps}", arm_groups, steps)
    if a.sft:  # the bootstrap's recipe (its SFT, target loss and steps), from scratch, with the new demos
        path = a.out / f"sft_seed_swap{a.demos}.safetensors"
        seed_demos = [deps.run.abs(d) for ds in state.get("demo_history", {}).values() for d in ds]
        trained = {"loaded": str(path)}
        if not path.exists():
            trained = PolicyTrainer(cfg.learn).bootstrap(seed_demos + new, path)
        evaluate(path.stem, path, trained)
        if a.then_round:  # the round's weighted update with the new demonstrations, from the retrained policy
            for steps in a.steps:
                weighted(path, f"{path.stem}_then_round_steps{steps}", arms[f"swap{a.demos}"], steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
