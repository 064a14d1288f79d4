"""Answers FINDINGS #61 (issue #41: what a LIBERO round that retrains should train on). `libero_r1`'s rounds
(FINDINGS #59-#60) gained less under LIBERO-Pro's position change than #55's oracle and cost the original
layouts, where the oracle gained. Two things differ, and both are settings of the loop: the oracle's
swapped-start scenes drew their shift and wording from the seed distribution, where every exploration
variant of the `libero` preset (`variant_factors` 3) also moves the item's region to an unseen shift and
words the task in an unseen paraphrase; and the oracle retrained on 556 demonstrations at the bootstrap's
1,500 steps, where the loop's fifth round retrained on 940 at the same 1,500 (each demonstration seen about a
third as often as in the bootstrap). This study crosses the two, on development scenes only:

    python -m studies.libero_retrain_dev --run runs/libero_t1 --demos 256 --workers 2 \
        --out runs/libero_retrain_dev

`--run`'s bootstrap demonstrations (its round-0 `demo_history`) plus `--demos` new DART demonstrations of
each kind — `start`: the item in its second or third swap partner's region, shift and wording as the seed
distribution has them (#55's oracle); `all`: the same starts, each also at one of the three unseen shifts and
in one of the two unseen paraphrases (what the loop's exploration variants make) — and the bootstrap's recipe
retrained on each at its 1,500 steps (`fixed`) and at steps scaled to the data (`scaled`: 1,500 × demos /
the bootstrap's demos, `LearnConfig.retrain_steps`). Every policy, and the bootstrap, acts in the same
development scenes (seeds 90,000 + 100 i + j, `studies.libero_loop_sft`'s range, never a protocol suite) with
one sampling seed: each task with the item in its own region (the file's words, no shift: the original
layouts' kind), in `swap2` (a start the new demonstrations show) and in `swap4` (a partner none shows).
Demonstrations, policies and `<out>/results.json` land as they finish; a rerun keeps them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from common.cli import UsageError, command_parser, worker_count

FAMILY = "libero_object"
EVAL_STARTS = ("own", "swap2", "swap4")
STARTS = ("swap2", "swap3")
UNSEEN_SHIFTS = ("minus_y", "plus_x", "minus_x")
UNSEEN_WORDS = ("needs", "grab")
DEMO_SEED0 = {"start": 82_000, "all": 84_000}  # #55's 82,000 range for `start`; `all` below 85,000 (`own`)
KINDS = ("start", "all")
STEPS = ("fixed", "scaled")


def layouts(kind: str) -> tuple[dict[str, dict[str, str]], ...]:
    """The new demonstrations' layouts: the start alone, or the start with an unseen shift and paraphrase."""
    if kind == "start":
        return tuple({"spatial": {"start": s}} for s in STARTS)
    return tuple({"spatial": {"start": s, "shift": sh}, "task": {"wording": w}}
                 for s in STARTS for sh in UNSEEN_SHIFTS for w in UNSEEN_WORDS)


def bootstrap_demos(run: Path) -> tuple[Any, list[Path], Path]:
    """(the run's config, its bootstrap demonstrations, its round-0 policy) from its last checkpoint."""
    from agents.graph.rundir import RunDir
    from agents.replay import history, open_app
    from agents.run_checks import read_config_file

    rd = RunDir(run)
    with open_app(rd) as app:
        line = history(app)
    state = next((dict(s.values) for s in line
                  if s.values.get("round") == 0 and s.values.get("demo_history")), None)
    if state is None:
        raise ValueError(f"{run}: no checkpoint after its bootstrap (did round 0 finish?)")
    demos = [rd.abs(d) for ds in state["demo_history"].values() for d in ds]
    return read_config_file(rd.config, "config.json"), demos, rd.abs(state["policy"])


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_retrain_dev", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero` "
                    "past its bootstrap")
    ap.add_argument("--demos", type=int, default=256, help="new demonstrations of each kind (#55: 256)")
    ap.add_argument("--per-task", type=int, default=3, help="development scenes per task and start")
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.demos < 1 or a.per_task < 1:
        ap.error("--demos and --per-task must be >= 1")
    from agents.graph.trainer import PolicyTrainer, retrain_steps
    from studies.libero_layouts import DevResults, collect
    from studies.libero_loop_sft import DEV_SEED0

    try:
        cfg, seed, boot = bootstrap_demos(a.run)
    except (UsageError, ValueError, FileNotFoundError) as e:
        print(f"error: {e} (give a run directory of `agents.run --preset libero` past round 0)",
              file=sys.stderr)
        return 2
    if tuple(cfg.families) != (FAMILY,):
        print(f"error: {a.run} ran {list(cfg.families)}, not [{FAMILY!r}]", file=sys.stderr)
        return 2
    setup = {"run": str(a.run), "bootstrap_demos": len(seed), "demos": a.demos, "dev_seeds_from": DEV_SEED0,
             "eval_starts": list(EVAL_STARTS), "per_task": a.per_task}
    dev = DevResults(a.out, setup, ap.error, EVAL_STARTS, a.per_task, cfg.rollout_max_steps, a.workers)
    results, evaluate = dev.results, dev.evaluate

    evaluate("bootstrap", boot, {"policy": str(boot)})
    new: dict[str, list[Path]] = {}
    for kind in KINDS:
        new[kind], tried = collect(a.demos, layouts(kind), DEMO_SEED0[kind], a.out / f"demos_{kind}",
                                   a.workers)
        results[f"new_demos_{kind}"] = {"kept": len(new[kind]), "scenes": tried,
                                        "layouts": [json.dumps(x) for x in layouts(kind)]}
    for kind in KINDS:
        for steps in STEPS:
            demos = seed + new[kind]
            n = retrain_steps(cfg.learn.sft_steps, len(demos), len(seed)) if steps == "scaled" else \
                cfg.learn.sft_steps
            path = a.out / f"{kind}{a.demos}_{steps}.safetensors"
            trained: dict[str, Any] = {"loaded": str(path), "sft_steps": n}
            if not path.exists():
                trained = PolicyTrainer(dataclasses.replace(cfg.learn, sft_steps=n)).bootstrap(demos, path)
            evaluate(path.stem, path, trained)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
