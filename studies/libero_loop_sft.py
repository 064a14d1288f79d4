"""Answers FINDINGS #35, #36 and #39. The loop's LIBERO bootstrap, varied: SFT on a `--preset libero` run's
seed demonstrations with one setting changed, each policy scored on development scenes of the run's family —
scenes of the loop's own kind (LIBERO-sampled starts, own or swapped, either seen wording), from seeds no run
or suite uses. Never the protocol's suites: a choice made here must not be made on the numbers it is reported
with.

    python -m studies.libero_loop_sft --run runs/libero_s31 --variants plain,ema,grounding \
        --out runs/libero_ab

Variants: `plain` (the preset's SFT without the auxiliary target loss, as the loop ran it through FINDINGS
#38), `ema` (weights averaged at 0.999, as `experiments.liberopro.sft` trains), `grounding`
(`ObjectTokenConfig.grounding`), `target` (the auxiliary loss `ObjectTokenConfig.target_loss`, weight 1:
name the goal's item among the tokens), `standalone` (every setting `experiments.liberopro.sft` trains and
samples with: EMA 0.999, warm-up 50 steps, 10 flow steps).
`--demos-from DIR` trains on that directory's successful `demo_*.npz` instead of the run's seed ones.
Every variant trains on the same demonstrations (the first `--demos` successful ones, by file name) and
acts in the same scenes with the same sampling seed; results go to `<out>/results.json` (a variant already
trained is loaded, not retrained).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count

VARIANTS = ("plain", "ema", "grounding", "target", "standalone")
TARGET_LOSS = 1.0  # the `target` variant's auxiliary loss weight (one value, not tuned)
DEV_SEED0 = 90_000  # the family's dev scenes: past the loop's held-out seeds and its generators' draws


def seed_demos(run: Path, n: int, where: Path | None = None) -> list[Path]:
    """The first `n` successful seed demonstrations of a run (round 0), or of directory `where`, by name."""
    found = sorted((where or run / "episodes" / "round_00").glob("demo_*.npz"))
    ok = [p for p in found if json.loads(p.with_suffix(".json").read_text())["success"]][:n]
    if not ok:
        raise FileNotFoundError(f"{where or run}: no successful {'' if where else 'episodes/round_00/'}"
                                "demo_*.npz")
    return ok


def train_variant(variant: str, demos: list[Path], out: Path) -> dict[str, Any]:
    """The libero preset's bootstrap SFT with `variant`'s one change."""
    from agents.config import get_preset
    from agents.graph.trainer import PolicyTrainer, finetune_warmup

    lc = get_preset("libero").learn
    if variant not in ("ema", "standalone"):
        pc = dataclasses.replace(lc.policy, grounding=variant == "grounding",
                                 target_loss=TARGET_LOSS if variant == "target" else 0.0)
        return PolicyTrainer(dataclasses.replace(lc, policy=pc)).bootstrap(demos, out)
    import torch

    from coda_policy.registry import make_policy
    from coda_policy.sft import SFTConfig, train
    from sim.episode import Episode

    torch.set_num_threads(lc.policy.torch_threads)
    pc = lc.policy if variant == "ema" else dataclasses.replace(lc.policy, flow_steps=10)
    policy = make_policy(pc)
    data = policy.chunk_data([Episode.load(p) for p in demos])
    policy.set_stats(data.stats)
    cfg = SFTConfig(name="libero_ab", demos=data.episodes, steps=lc.sft_steps,
                    warmup=finetune_warmup(lc.sft_steps) if variant == "ema" else 50, ema=0.999,
                    policy=policy.config,
                    log_every=lc.sft_steps)
    speed = train(policy, data.tensors, cfg)
    policy.save(out)
    return {"sft_steps": lc.sft_steps, "demos": data.episodes, "train_s": round(speed["train_s"], 2)}


def dev_episode(args: tuple[Any, ...]) -> dict[str, Any]:
    """One development scene of `family` (seed) with the policy at `path`: (path, family, seed, max_steps)
    samples the scene in distribution; a fifth element, factor values, makes that scene instead."""
    path, family, seed, max_steps, *factors = args
    from sim.families import get_family

    fam = get_family(family)
    return act(path, fam.make_scene(factors[0], seed) if factors else fam.sample_scene(seed), max_steps)


def start_of(spec: Any) -> str:
    """Where the scene's task starts, as results group it: the value of its family's first spatial factor
    (libero_object's `start`, the item's layout; libero_spatial's `plate`, where the plate starts)."""
    from sim.families import get_family

    where = next(d.name for d in get_family(spec.family).factors if d.group == "spatial")
    return str(spec.factors["spatial"][where])


def act(path: str, spec: Any, max_steps: int) -> dict[str, Any]:
    """The policy at `path` (sampling seed 0) in scene `spec`: its task, start (`start_of`), outcome and
    seed."""
    from coda_policy.awr import load_seeded
    from sim.episode import run_episode

    ep = run_episode(spec, load_seeded(path, 0).bind(spec), max_steps=max_steps, record_every=20)
    return {"seed": spec.seed, "task": spec.factors["task"]["task"], "start": start_of(spec),
            "success": bool(ep.success), "failing_phase": ep.failing_phase}


def scored(eps: list[dict[str, Any]], trained: dict[str, Any]) -> dict[str, Any]:
    """A policy's results on development scenes: successes overall and per start, every episode."""
    by_start = {}
    for s in sorted({e["start"] for e in eps}):
        mine = [e["success"] for e in eps if e["start"] == s]
        by_start[s] = f"{sum(mine)}/{len(mine)}"
    return {"train": trained, "successes": sum(e["success"] for e in eps), "episodes": len(eps),
            "by_start": by_start, "episodes_run": eps}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_loop_sft", __doc__)
    ap.add_argument("--run", type=Path, required=True, help="a run directory of `agents.run --preset libero`")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"comma-separated, of {', '.join(VARIANTS)}")
    ap.add_argument("--demos", type=int, default=100,
                    help="seed demonstrations to train on (the preset's 100)")
    ap.add_argument("--demos-from", type=Path, default=None,
                    help="train on this directory's demo_*.npz instead of the run's seed demonstrations")
    ap.add_argument("--scenes", type=int, default=20, help=f"development scenes, seeds {DEV_SEED0}, ...")
    ap.add_argument("--workers", type=worker_count, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    if not variants or any(v not in VARIANTS for v in variants):
        ap.error(f"--variants {a.variants}: choose from {', '.join(VARIANTS)}")
    if a.demos < 1 or a.scenes < 1 or a.workers < 1:
        ap.error("--demos, --scenes and --workers must be >= 1")
    try:
        cfg = json.loads((a.run / "config.json").read_text())
        demos = seed_demos(a.run, a.demos, a.demos_from)
    except FileNotFoundError as e:
        print(f"error: {e} (give a run directory of `agents.run --preset libero`)", file=sys.stderr)
        return 2
    from experiments.liberopro.evaluate import spawn_map

    a.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"run": str(a.run), "demos": len(demos),
                               "demos_from": str(a.demos_from or a.run / "episodes" / "round_00"),
                               "dev_seeds": [DEV_SEED0, DEV_SEED0 + a.scenes]}
    for v in variants:
        path = a.out / f"{v}.safetensors"
        trained = train_variant(v, demos, path) if not path.exists() else {"loaded": str(path)}
        jobs = [(str(path), cfg["families"][0], DEV_SEED0 + i, cfg["rollout_max_steps"])
                for i in range(a.scenes)]
        eps = list(spawn_map(dev_episode, jobs, a.workers))
        results[v] = scored(eps, trained)
        print(f"{v}: {results[v]['successes']}/{len(eps)} dev scenes, by start {results[v]['by_start']}",
              flush=True)
        (a.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
