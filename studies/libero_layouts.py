"""Answers FINDINGS #36, #37 and #38. Does the loop's LIBERO policy learn which item the words name when its
demonstrations show each item in more places? Development scenes only — never the protocol's suites (FINDINGS
#35: the `--preset libero` policy learned the two places an item starts in, own and its first swap partner's,
not the item).

    python -m studies.libero_layouts --run runs/libero_s31 --out runs/libero_layouts --workers 2

Two arms, the same number of demonstrations and the same SFT (the libero preset's bootstrap without its
auxiliary target loss, as FINDINGS #36-#38 ran it):
- `two`: the run's first `--demos` successful seed demonstrations (own and `swap1` starts, as the loop
  trained);
- `four`: the first half of those plus as many new DART demonstrations (`sim.libero.episode`, σ 0.3, up to
  three tries per scene) with the item in its second or third partner's region (`swap2`, `swap3`; seeds
  80,000 + k, tasks in turn).
Both act in the same development scenes (seeds 90,000 + k): every task with the item in its own region and
in its fourth partner's (`swap4`, a region neither arm's item starts in). The fourth partner is not the one
LIBERO-Pro's `libero_object_swap` uses (`sim.families.libero_object.scene`), so the benchmark's layout stays
held out. With `--own-arm`, a third arm of as many new demonstrations with every item in its own region and
the file's words — the standalone SFT's kind of data (FINDINGS #21); `--arms` picks which arms run (e.g.
`--arms own`). Two more arms separate the loop's data from its variation (FINDINGS #39): `two_dart`, the
run's first `--demos` successful seed demonstrations that are DART runs (the loop keeps the clean expert
run when no noisy try succeeds), and `mixed`, as many new DART demonstrations collected here at the
loop's in-distribution variation (`MIXED`: own or `swap1` start, moved or not, the file's words or the
first paraphrase, in turn; seeds 87,000 + k). Demonstrations, policies and `results.json` land under
`--out`; a rerun keeps what is there.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count

FAMILY = "libero_object"
NEW_STARTS = ("swap2", "swap3")
EVAL_STARTS = ("own", "swap4")
DEMO_SEED0 = 80_000  # new demonstrations: past the loop's scene seeds, before the dev scenes
ARMS = ("two", "two_dart", "four", "own", "mixed")
OWN_SEED0 = 85_000  # the `own` arm's demonstrations
MIXED_SEED0 = 87_000  # the `mixed` arm's demonstrations
# the family's in-distribution layouts, as the loop's seed scenes draw them (start × shift × wording)
MIXED = tuple({"spatial": {"start": start, "shift": shift}, "task": {"wording": wording}}
              for start in ("own", "swap1") for shift in ("none", "plus_y") for wording in ("bddl", "put"))
DEV_SEED0 = 90_000  # as studies.libero_loop_sft


def layout_name(layout: dict[str, dict[str, str]]) -> str:
    """A layout's values in a file name: `own`, or `swap1-plus_y-put` (start, then shift and wording when
    given)."""
    sp, words = layout.get("spatial", {}), layout.get("task", {})
    vals = [sp["start"]] + [v for v in (sp.get("shift"), words.get("wording")) if v is not None]
    return "-".join(vals)


def demo_job(args: tuple[str, dict[str, dict[str, str]], int, str]) -> dict[str, Any]:
    """A DART demonstration of `task` in `layout` (factor choices by group; scene seed `seed`), saved under
    `out` when one of three noisy tries succeeds."""
    task, layout, seed, out = args
    from sim.families import get_family
    from sim.libero.episode import DART_NOISE, run_libero_episode

    name = layout_name(layout)
    path = Path(out) / f"demo_{task}_{name}_{seed}"
    row = {"task": task, "start": name, "seed": seed, "path": str(path.with_suffix(".npz"))}
    if path.with_suffix(".json").exists():
        return row | {"success": json.loads(path.with_suffix(".json").read_text())["success"]}
    choices = {"task": {"task": task, **layout.get("task", {})}, "spatial": dict(layout["spatial"])}
    spec = get_family(FAMILY).make_scene(choices, seed)
    ep = None
    for k in range(3):
        ep = run_libero_episode(spec, dart_noise=DART_NOISE, noise_seed=k)
        if ep.success:
            break
    assert ep is not None
    ep.save(path)
    return row | {"success": bool(ep.success)}


def collect(n: int, layouts: tuple[dict[str, dict[str, str]], ...], seed0: int, out: Path,
            workers: int) -> tuple[list[Path], int]:
    """`n` successful new demonstrations (tasks in turn, `layouts` in turn after each round of tasks, scene
    seeds `seed0` + k), and how many scenes it took."""
    from experiments.liberopro.evaluate import spawn_map
    from sim.families.libero_object.scene import TASKS

    tasks = list(TASKS)
    out.mkdir(parents=True, exist_ok=True)
    kept: list[Path] = []
    k = 0
    while len(kept) < n:
        batch = []
        for j in range(k, k + 2 * max(workers, 1) * 4):
            batch.append((tasks[j % len(tasks)], layouts[(j // len(tasks)) % len(layouts)], seed0 + j,
                          str(out)))
        k += len(batch)
        for r in spawn_map(demo_job, batch, workers):
            if r["success"] and len(kept) < n:
                kept.append(Path(r["path"]))
        print(f"  demonstrations: {len(kept)}/{n} kept of {k} scenes", flush=True)
    return kept, k


def starts(names: tuple[str, ...]) -> tuple[dict[str, dict[str, str]], ...]:
    """Layouts that set only where the item starts."""
    return tuple({"spatial": {"start": x}} for x in names)


def dart_only(run: Path, n: int) -> list[Path]:
    """The run's first `n` successful seed demonstrations (by name) that are DART runs."""
    found = sorted((run / "episodes" / "round_00").glob("demo_*.npz"))
    meta = {p: json.loads(p.with_suffix(".json").read_text()) for p in found}
    ok = [p for p in found if meta[p]["success"] and meta[p]["policy"].startswith("expert_dart")][:n]
    if len(ok) < n:
        raise FileNotFoundError(f"{run}: {len(ok)} successful DART seed demonstrations, --demos asks {n}")
    return ok


def dev_jobs(path: Path, where: tuple[str, ...], per_task: int,
             max_steps: int | None) -> list[tuple[Any, ...]]:
    """`dev_episode` jobs for the policy at `path`: every task with the item starting at each of `where`,
    `per_task` scenes each (seeds DEV_SEED0 + 100 i + j)."""
    from sim.families.libero_object.scene import TASKS

    return [(str(path), FAMILY, DEV_SEED0 + i * 100 + j, max_steps,
             {"task": {"task": task}, "spatial": {"start": start}})
            for i, task in enumerate(TASKS) for start in where for j in range(per_task)]


class DevResults:
    """A study's `<out>/results.json`: `setup` checked against the file's (`refuse(message)` when another
    setup's results are there), then each policy's development-scene score (every task at each of `where`,
    `per_task` scenes) added and written as it lands, a score already there kept."""

    def __init__(self, out: Path, setup: dict[str, Any], refuse: Any, where: tuple[str, ...], per_task: int,
                 max_steps: int | None, workers: int) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "results.json"
        self.results: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}
        if self.results and {k: self.results.get(k) for k in setup} != setup:
            refuse(f"--out {out} holds results of another setup "
                   f"({ {k: self.results.get(k) for k in setup} }); give another --out")
        self.results.update(setup)
        self.where, self.per_task, self.max_steps, self.workers = where, per_task, max_steps, workers

    def evaluate(self, key: str, path: Path, trained: dict[str, Any]) -> None:
        from experiments.liberopro.evaluate import spawn_map
        from studies.libero_loop_sft import dev_episode, scored

        r = self.results
        if key in r:
            print(f"{key}: {r[key]['successes']}/{r[key]['episodes']} (kept)", flush=True)
            return
        jobs = dev_jobs(path, self.where, self.per_task, self.max_steps)
        r[key] = scored(list(spawn_map(dev_episode, jobs, self.workers)), trained)
        print(f"{key}: {r[key]['successes']}/{r[key]['episodes']}, by start {r[key]['by_start']}", flush=True)
        self.path.write_text(json.dumps(r, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_layouts", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--demos", type=int, default=100, help="demonstrations per arm (the preset's 100)")
    ap.add_argument("--per-task", type=int, default=2, help="development scenes per task and start")
    ap.add_argument("--own-arm", action="store_true",
                    help="a third arm: as many new demonstrations, every item in its own region")
    ap.add_argument("--arms", default=None,
                    help="comma-separated, of two, two_dart, four, own, mixed (default: two,four, and own "
                         "with --own-arm)")
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.demos < 2 or a.per_task < 1 or a.workers < 1:
        ap.error("--demos must be >= 2, --per-task and --workers >= 1")
    if a.arms is None:
        wanted = ["two", "four", "own"] if a.own_arm else ["two", "four"]
    else:
        wanted = [x.strip() for x in a.arms.split(",") if x.strip()]
    if not wanted or any(x not in ARMS for x in wanted):
        ap.error(f"--arms {a.arms}: choose from {', '.join(ARMS)}")
    from studies.libero_loop_sft import dev_episode, scored, seed_demos

    try:
        cfg = json.loads((a.run / "config.json").read_text())
        run_demos = seed_demos(a.run, a.demos)
        run_dart = dart_only(a.run, a.demos) if "two_dart" in wanted else []
    except FileNotFoundError as e:
        print(f"error: {e} (give a run directory of `agents.run --preset libero`)", file=sys.stderr)
        return 2
    if cfg["families"] != [FAMILY]:
        print(f"error: {a.run} ran {cfg['families']}, not [{FAMILY!r}]", file=sys.stderr)
        return 2
    from agents.config import get_preset
    from agents.graph.trainer import PolicyTrainer
    from experiments.liberopro.evaluate import spawn_map
    from sim.families.libero_object.scene import TASKS

    a.out.mkdir(parents=True, exist_ok=True)
    half = a.demos // 2
    arms: dict[str, list[Path]] = {"two": run_demos} if "two" in wanted else {}
    results: dict[str, Any] = {"run": str(a.run), "demos_per_arm": a.demos, "dev_seeds_from": DEV_SEED0,
                               "eval_starts": list(EVAL_STARTS)}
    if "four" in wanted:
        new, tried = collect(a.demos - half, starts(NEW_STARTS), DEMO_SEED0, a.out / "demos", a.workers)
        arms["four"] = run_demos[:half] + new
        results["new_demos"] = {"kept": len(new), "scenes": tried, "starts": list(NEW_STARTS)}
    if "own" in wanted:  # the standalone's kind of data: one layout per task, the file's words (FINDINGS #21)
        own, tried = collect(a.demos, starts(("own",)), OWN_SEED0, a.out / "demos_own", a.workers)
        arms["own"] = own
        results["own_demos"] = {"kept": len(own), "scenes": tried, "starts": ["own"]}
    if "two_dart" in wanted:  # the loop's own demonstrations without its clean-expert fallbacks
        arms["two_dart"] = run_dart
    if "mixed" in wanted:  # the loop's variation, collected as the `own` arm is
        mixed, tried = collect(a.demos, MIXED, MIXED_SEED0, a.out / "demos_mixed", a.workers)
        arms["mixed"] = mixed
        results["mixed_demos"] = {"kept": len(mixed), "scenes": tried,
                                  "layouts": [layout_name(x) for x in MIXED]}
    learn = get_preset("libero").learn  # the bootstrap as FINDINGS #36-#38 ran it: no auxiliary target loss
    plain = dataclasses.replace(learn.policy, target_loss=0.0)
    trainer = PolicyTrainer(dataclasses.replace(learn, policy=plain))
    done = json.loads((a.out / "results.json").read_text()) if (a.out / "results.json").exists() else {}
    for arm, demos in arms.items():
        path = a.out / f"{arm}.safetensors"
        n_eval = len(TASKS) * len(EVAL_STARTS) * a.per_task
        if arm in done and path.exists() and done[arm]["episodes"] == n_eval:
            results[arm] = done[arm]  # trained and scored by an earlier run of the same command
            print(f"{arm}: {done[arm]['successes']}/{done[arm]['episodes']} dev scenes (kept)", flush=True)
            continue
        trained = trainer.bootstrap(demos, path) if not path.exists() else {"loaded": str(path)}
        jobs = dev_jobs(path, EVAL_STARTS, a.per_task, cfg["rollout_max_steps"])
        results[arm] = scored(list(spawn_map(dev_episode, jobs, a.workers)), trained)
        print(f"{arm}: {results[arm]['successes']}/{results[arm]['episodes']} dev scenes, by start "
              f"{results[arm]['by_start']}", flush=True)
        (a.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
