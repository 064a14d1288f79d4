"""Our object-token policy on LIBERO: scripted-expert demonstrations → SFT → a checkpoint that
`python -m experiments.liberopro --policy CHECKPOINT` evaluates under the protocol.

    python -m experiments.liberopro.sft --suite libero_spatial --demos-per-task 10 --out runs/libero_sft
    python -m experiments.liberopro --suite libero_spatial --perturb position \
        --policy runs/libero_sft/policy.safetensors
    python -m experiments.liberopro.sft --inspect runs/libero_sft/policy.safetensors --task 0 --start 0

Demonstrations start where LIBERO places the objects itself (`LiberoEnv.reset(seed=...)` without an init
state: each object sampled in its BDDL region), demonstration i of a task from seed `start_seed(seed, i)`,
in the original suite's task files only: the protocol evaluates from init states 0–49 of every perturbed
suite's file, all of them, so no init state is a training start. Each start is checked against those 250
evaluation starts of its task (`experiments.liberopro.starts`); one that equals any is refused, counted and
reported. Only successful demonstrations are kept. With `--noise σ` the demonstrations are DART-style: the
environment executes the expert's action plus Gaussian noise (σ on the six arm dimensions, never the
gripper) while the recorded label is the expert's own action from the state it is in — so the data shows
how to come back from states a slightly wrong policy reaches (FINDINGS #19: plain cloning drifts off the
demonstrations within 40 steps). The policy reads privileged state as object tokens
(`coda_policy.object_token.libero_features`) and predicts chunks of LIBERO's own 7-D actions. The public
LIBERO demonstration datasets cannot be downloaded here; the scripted expert is where the demonstrations
come from (its success per suite is in docs/libero.md). The committed SFT figures in docs/libero.md were
trained from init states 20 and up, before this (evaluated then on states 0–4 only).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser, worker_count


def start_seed(seed: int, i: int) -> int:
    """The LIBERO seed demonstration i of a run seeded `seed` starts from (its objects' sampled places)."""
    return seed * 100_000 + i


def collect(suite: str, n_tasks: int | None, per_task: int, seed: int, log: Any = print, noise: float = 0.0,
            only: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Successful expert episodes from LIBERO's sampled starts — per step, the features and the expert's
    action (executed with N(0, noise²) added to the arm dimensions when `noise` > 0) — and the starts
    refused for equalling one the protocol evaluates from (task, seed, which evaluation starts). `only`:
    that one task of the first `n_tasks` (a worker's share; every episode is seeded by its own index, so the
    split changes nothing)."""
    from common.text import default_embedder
    from experiments.liberopro.evaluate import tasks
    from experiments.liberopro.starts import clashes, evaluation_starts, margin
    from sim.libero.drawer import expert_for
    from sim.libero.env import LiberoEnv
    from sim.libero.expert import UnsupportedGoal

    emb = default_embedder()
    episodes: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for task in tasks(suite)[:n_tasks]:
        if only is not None and task.name != only:
            continue
        evals = evaluation_starts(suite, task.name)
        env = LiberoEnv.for_task(task)
        kept, before = 0, len(refused)
        try:
            for i in range(per_task):
                env.reset(seed=start_seed(seed, i))  # no init state: LIBERO samples the start
                equal = clashes(env.start_positions, evals)
                if equal:
                    refused.append({"task": task.name, "start_seed": start_seed(seed, i), "equals": equal})
                    continue
                try:
                    expert = expert_for(env)
                except UnsupportedGoal as e:
                    log(f"{task.name}: {e}; skipped")
                    break
                feats, acts = dart_episode(env, expert, task.instruction, task.max_steps, noise,
                                           np.random.default_rng([seed, i]), emb)
                if env.success():
                    kept += 1
                    episodes.append({"task": task.name, "start_seed": start_seed(seed, i),
                                     "eval_margin_m": round(margin(env.start_positions, evals), 4),
                                     "features": feats, "actions": np.asarray(acts, np.float32)})
        finally:
            env.close()
        n_refused = len(refused) - before
        log(f"{task.name}: {kept}/{per_task} demonstrations kept"
            + (f"; {n_refused} starts refused: equal to an evaluation start" if n_refused else ""))
    return episodes, refused


def dart_episode(env: Any, expert: Any, instruction: str, max_steps: int, noise: float,
                 rng: np.random.Generator, emb: Any) -> tuple[list[Any], list[Any]]:
    """One expert episode from the environment's current state (just reset): per step the policy's
    features and the expert's action (the label); the environment executes that action plus N(0, noise²)
    on the six arm dimensions when `noise` > 0 (DART). Ends at success or `max_steps`."""
    from coda_policy.object_token.libero_features import featurize_libero, reader

    feats, acts, read = [], [], reader(env)
    while env.steps < max_steps and not env.success():
        feats.append(featurize_libero(read, instruction, emb))
        a = expert.act()
        acts.append(a)
        executed = np.array(a, float)
        if noise > 0:
            executed[:6] = np.clip(executed[:6] + rng.normal(0.0, noise, 6), -1.0, 1.0)
        env.step(executed)
    return feats, acts


def _collect_task(args: tuple[Any, ...]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    suite, n_tasks, per_task, seed, noise, only = args
    return collect(suite, n_tasks, per_task, seed, log=print, noise=noise, only=only)


def collect_parallel(suite: str, n_tasks: int | None, per_task: int, seed: int, noise: float, workers: int,
                     log: Any = print) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`collect`, one task per job on `workers` spawned processes (the same episodes, in task order)."""
    from experiments.liberopro.evaluate import spawn_map, tasks

    if workers <= 1:
        return collect(suite, n_tasks, per_task, seed, log=log, noise=noise)
    jobs = [(suite, n_tasks, per_task, seed, noise, t.name) for t in tasks(suite)[:n_tasks]]
    batches = list(spawn_map(_collect_task, jobs, workers))
    return [e for kept, _ in batches for e in kept], [r for _, refused in batches for r in refused]


def save_demos(episodes: list[dict[str, Any]], path: Path) -> Path:
    """The demonstrations a policy was trained on, kept beside it (`--collect-only` stops here)."""
    import pickle

    with open(path, "wb") as f:
        pickle.dump(episodes, f)
    return path


def chunks(episodes: list[dict[str, Any]], chunk: int) -> dict[str, Any]:
    """Every step of every episode starts a chunk (padded with the episode's last action), collated."""
    from coda_policy.object_token.features import collate

    items = []
    for ep in episodes:
        acts = ep["actions"]
        for t, f in enumerate(ep["features"]):
            idx = np.minimum(np.arange(t, t + chunk), len(acts) - 1)
            items.append({**f, "actions": acts[idx]})
    return collate(items)


def train(episodes: list[dict[str, Any]], steps: int, seed: int, out: Path) -> tuple[Path, dict[str, Any]]:
    from coda_policy.object_token.configuration_object_token import ObjectTokenConfig
    from coda_policy.object_token.normalize import NormStats
    from coda_policy.registry import make_policy
    from coda_policy.sft import SFTConfig
    from coda_policy.sft import train as sft_train

    pc = ObjectTokenConfig(seed=seed, batch_size=64)
    data = chunks(episodes, pc.chunk)
    mask = data["object_mask"].numpy()
    stats = NormStats.compute(data["robot"].numpy(), data["objects"].numpy()[mask],
                              np.concatenate([ep["actions"] for ep in episodes]))
    policy = make_policy(pc)
    policy.set_stats(stats)
    cfg = SFTConfig(name="libero_sft", steps=steps, warmup=min(50, steps // 10), policy=pc, demos=1)
    speed = sft_train(policy, data, cfg)
    path = policy.save(out / "policy.safetensors")
    return path, {**speed, "chunks": int(len(data["actions"]))}


def inspect(checkpoint: Path, suite: str, task_index: int, start: int, windows: int = 6,
            log: Any = print) -> dict[str, Any]:
    """Where a trained policy parts from the expert, on one training start (LIBERO's sample for seed
    `start`; `start_seed(0, i)` is demonstration i's): open loop (its chunk at each 8-step window of the
    expert's own trajectory, averaged, beside the expert's actions), then closed loop (re-planning every
    step: where the hand goes, where the goal's object is)."""
    from coda_policy.object_token.libero_features import LiberoPolicy
    from experiments.liberopro.evaluate import tasks
    from sim.libero.env import LiberoEnv
    from sim.libero.expert import PickPlaceExpert

    task = tasks(suite)[task_index]
    env = LiberoEnv.for_task(task)
    out: dict[str, Any] = {"task": task.name, "start_seed": start, "open_loop": [], "closed_loop": []}
    try:
        policy = LiberoPolicy(checkpoint, env, task.instruction)
        env.reset(seed=start)
        policy.reset(start)
        out["objects"] = {n: np.round(env.box(n).center, 3).tolist() for n in env.object_names}
        log(f"at the start: {out['objects']}")
        expert = PickPlaceExpert(env)
        for w in range(windows):
            mine = policy.chunk(seed=0).mean(0)
            theirs = []
            for _ in range(8):
                theirs.append(expert.act())
                env.step(theirs[-1])
            row = {"step": 8 * w, "expert": np.round(np.mean(theirs, 0), 3).tolist(),
                   "policy": np.round(mine.astype(float), 3).tolist()}
            out["open_loop"].append(row)
            log(f"open loop, steps {8 * w}-{8 * w + 7}: expert {row['expert']} policy {row['policy']}")
        env.reset(seed=start)
        policy.reset(start)
        subject = expert.obj
        while env.steps < task.max_steps and not env.success():
            env.step(policy.chunk(seed=0)[0])
            if env.steps % 40 == 0:
                row = {"step": env.steps, "hand": np.round(env.eef, 3).tolist(),
                       "subject": np.round(env.box(subject).center, 3).tolist(),
                       "gripper": round(env.gripper_width, 3)}
                out["closed_loop"].append(row)
                log(f"closed loop, step {row['step']}: hand {row['hand']} {subject} {row['subject']} "
                    f"gripper {row['gripper']}")
        out["success"] = env.success()
    finally:
        env.close()
    return out


def main(argv: list[str] | None = None) -> int:
    from experiments.liberopro.evaluate import SUITES

    ap = command_parser("experiments.liberopro.sft", __doc__)
    ap.add_argument("--suite", choices=SUITES, default="libero_spatial",
                    help="the original suite whose tasks are demonstrated (never a perturbed one: those are "
                         "what the protocol tests)")
    ap.add_argument("--tasks", type=int, help="the suite's first N tasks (default all)")
    ap.add_argument("--demos-per-task", type=int, default=10,
                    help="demonstration tries per task, each from LIBERO's sampled start for its seed")
    ap.add_argument("--steps", type=int, default=3000, help="SFT optimiser steps")
    ap.add_argument("--noise", type=float, default=0.0,
                    help="DART-style demonstrations: σ of the Gaussian noise added to the executed arm "
                         "actions (labels stay the expert's); 0 = plain demonstrations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=worker_count, default=1,
                    help="processes collecting demonstrations (one task each)")
    ap.add_argument("--collect-only", action="store_true",
                    help="collect the demonstrations into OUT/demos.pkl and stop (no training)")
    ap.add_argument("--out", type=Path, default=Path("runs/libero_sft"))
    ap.add_argument("--inspect", type=Path, metavar="CHECKPOINT",
                    help="instead of training: where this policy parts from the expert on one start")
    ap.add_argument("--task", type=int, default=0, help="with --inspect: the task's index in the suite")
    ap.add_argument("--start", type=int, default=0,
                    help="with --inspect: the LIBERO seed of the start (a training start, not an init state)")
    a = ap.parse_args(argv)
    if a.inspect is not None:
        if not a.inspect.is_file():
            ap.error(f"--inspect {a.inspect}: no such policy file")
        res = inspect(a.inspect, a.suite, a.task, a.start, log=lambda m: print(m, flush=True))
        print(json.dumps({"success": res["success"]}))
        return 0
    if min(a.demos_per_task, a.steps, a.workers) < 1 or (a.tasks is not None and a.tasks < 1):
        ap.error("--demos-per-task, --steps, --workers and --tasks must be >= 1")
    if not 0.0 <= a.noise <= 1.0:
        ap.error("--noise must be in [0, 1] (actions are in [-1, 1])")
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    episodes, refused = collect_parallel(a.suite, a.tasks, a.demos_per_task, a.seed, a.noise, a.workers,
                                         log=lambda m: print(m, flush=True))
    if not episodes:
        print("error: the expert solved no demonstration; nothing to train on", file=sys.stderr)
        return 1
    save_demos(episodes, a.out / "demos.pkl")
    t1 = time.perf_counter()
    if a.collect_only:
        print(json.dumps({"demos": len(episodes), "steps_per_demo": float(np.mean([len(e["actions"])
                                                                                    for e in episodes])),
                          "starts_refused": refused, "collect_s": round(t1 - t0, 1),
                          "file": str(a.out / "demos.pkl")}))
        return 0
    path, speed = train(episodes, a.steps, a.seed, a.out)
    summary = {"suite": a.suite, "demos": len(episodes),
               "steps_per_demo": float(np.mean([len(e["actions"]) for e in episodes])),
               "start_seeds": [start_seed(a.seed, 0), start_seed(a.seed, a.demos_per_task - 1)],
               "starts_refused": refused, "eval_margin_m_min": min(e["eval_margin_m"] for e in episodes),
               "sft_steps": a.steps, "seed": a.seed, "noise": a.noise,
               "collect_s": round(t1 - t0, 1), "train_s": round(speed["train_s"], 1),
               "chunks": speed["chunks"], "policy": str(path)}
    (a.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
