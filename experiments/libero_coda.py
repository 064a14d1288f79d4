"""A CoDA round on LIBERO-Pro's position perturbation: generate → roll out → diagnose → verify → remember →
train, on real LIBERO scenes we write, then the benchmark protocol.

    python -m experiments.libero_coda --suite libero_object --policy runs/libero_sft_object_dart/policy.pt \\
        --out runs/libero_coda_object
    python -m experiments.libero_coda ... --arm original     # the control: the same demonstrations budget,
                                                             # every one on the task's own scene

This is a driver of its own, not yet the `agents` graph (`python -m agents.run` drives our MuJoCo families);
each step is the loop's step done on LIBERO scenes (`sim.libero.scene.LiberoScene`):

1. **generate**: a task's generation program has one factor here, where the object of interest starts:
   `swapped(subject, partner)` puts it in another object's placement region (and that object in its own) —
   LIBERO-Pro's own kind of position change. The partner that the task's LIBERO-Pro `_swap` file uses is
   **held out** (its file is read only to exclude it), so the evaluation measures a placement no round
   trained on. A scene counts only when `sim.libero.validity` finds the expert solves it.
2. **roll out** the policy on the task's own scene and on `--probe` generated scenes (one sampled start
   each; LIBERO samples starts inside the regions).
3. **diagnose** (rules over privileged state): a failure on a generated scene names the factor (where the
   object of interest started: the partner's region) and the phase (grasp while the object never left its
   support, place after; `experiments.liberopro._LiftWatch`).
4. **verify** one diagnosis per task: `--verify-n` starts of the diagnosed scene (targeted) against as many
   of the task's own scene (control), the loop's own test (`agents.critic.verify.decide`: one-sided Fisher).
5. **remember**: a validated mode is "the object of interest starts in region R". Its factor exists in
   every task of the suite, so it reaches the others (the partner there is whatever object starts in R;
   never the held-out one) — cross-task reuse, counted.
6. **train**: per task `--demos` DART demonstrations (the expert's labels, noisy execution, `--noise`):
   `--keep` of them on the task's own scene (against forgetting), the rest spread over the task's mode
   scenes — or over random generated scenes when no mode reaches it (the loop's exploration variants);
   then a fine-tune of the starting policy on them and, with `--replay`, on its own demonstrations again
   (as the loop replays earlier rounds' demonstrations).
7. **evaluate** under the protocol (`experiments.liberopro`): original, position and instruction suites.

Every stage writes its result under `--out` and is skipped when that file exists, so a killed run resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


# ---- the generation program's factor --------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """One task's scene and its position factor: the object of interest, the objects it may swap with
    (partner → the region it starts in) and the partner held out for the evaluation."""

    task: str
    instruction: str
    max_steps: int
    bddl: str
    subject: str
    partners: dict[str, str]
    held_out: str | None

    def scene(self, partner: str | None) -> Any:
        from sim.libero.scene import LiberoScene

        base = LiberoScene.from_bddl(self.bddl)
        return base if partner is None else base.swapped(self.subject, partner)

    def partner_in(self, region: str) -> str | None:
        """The object starting in `region` here, if it may be swapped with (a mode reaching this task)."""
        return next((p for p, r in self.partners.items() if r == region), None)


def layouts(suite: str) -> list[Layout]:
    """Every task of the original suite whose goal has an object of interest that starts on a placement
    region; partners are the other objects starting on placement regions, minus the goal's container and the
    held-out one."""
    from experiments.liberopro import tasks
    from sim.libero.scene import LiberoScene

    pro = {t.name: t for t in tasks(suite, "position")}
    out = []
    for t in tasks(suite):
        scene = LiberoScene.from_bddl(t.bddl)
        goal = scene.goal[0] if scene.goal else ()
        subject = goal[1] if len(goal) >= 2 else None
        named = {x for atom in scene.goal for x in atom[1:]}
        starts = {a[1]: a[2] for a in scene.init if a[0] == "on"}
        if subject not in starts or not scene.region(starts[subject]).ranges:
            continue
        partners = {o: r for o, r in starts.items() if o != subject and scene.region(r).ranges
                    and o not in named and not any(n.startswith(o + "_") for n in named)}
        held = None
        if t.name in pro:
            moved_to = LiberoScene.from_bddl(pro[t.name].bddl).start_region(subject).full_name
            held = next((o for o, r in partners.items() if r == moved_to), None)
        partners = {o: r for o, r in partners.items() if o != held}
        out.append(Layout(task=t.name, instruction=t.instruction, max_steps=t.max_steps, bddl=str(t.bddl),
                          subject=subject, partners=partners, held_out=held))
    return out


# ---- episodes (in worker processes) -----------------------------------------------------------------------
def _env(scene: Any, tmp: str) -> Any:
    from sim.libero.env import LiberoEnv

    return LiberoEnv(scene.write(Path(tmp) / "scene.bddl"), name=scene.problem)


def policy_episodes(layout: Layout, partner: str | None, policy: str,
                    seeds: list[int]) -> list[dict[str, Any]]:
    """The policy from LIBERO-sampled starts of one scene: success and, when it failed, the phase."""
    from coda_policy.object_token.libero_features import LiberoPolicy
    from experiments.liberopro import _LiftWatch

    out = []
    with tempfile.TemporaryDirectory(prefix="coda-libero-") as tmp:
        env = _env(layout.scene(partner), tmp)
        try:
            learned = LiberoPolicy(policy, env, layout.instruction)
            for s in seeds:
                env.reset(seed=s)
                learned.reset(s)
                lift = _LiftWatch(env, layout.subject)
                while env.steps < layout.max_steps and not env.success():
                    env.step(learned.act())
                    lift.watch()
                ok = env.success()
                out.append({"seed": s, "success": ok, "phase": None if ok else lift.failure_phase()})
        finally:
            env.close()
    return out


def expert_demos(layout: Layout, partner: str | None, seeds: list[int], noise: float) -> list[dict[str, Any]]:
    """DART demonstrations (`experiments.libero_sft.collect`'s recipe) from sampled starts of one scene;
    only the successful ones."""
    from common.text import default_embedder
    from experiments.libero_sft import dart_episode
    from sim.libero.expert import PickPlaceExpert

    emb = default_embedder()
    out = []
    with tempfile.TemporaryDirectory(prefix="coda-libero-") as tmp:
        env = _env(layout.scene(partner), tmp)
        try:
            for s in seeds:
                env.reset(seed=s)
                feats, acts = dart_episode(env, PickPlaceExpert(env), layout.instruction, layout.max_steps,
                                           noise, np.random.default_rng([s, 17]), emb)
                if env.success():
                    out.append({"task": layout.task, "partner": partner, "seed": s, "features": feats,
                                "actions": np.asarray(acts, np.float32)})
        finally:
            env.close()
    return out


def probe_task(layout: Layout, policy: str, probe: int, verify_n: int, seed: int) -> dict[str, Any]:
    """Steps 1–4 for one task: generated scenes checked, rolled out, the failures diagnosed, the first
    diagnosis verified against the task's own scene."""
    from agents.critic.verify import VerifyConfig, decide
    from sim.libero.validity import check

    rng = np.random.default_rng([seed, 1])
    names = sorted(layout.partners)
    picked = [names[int(i)] for i in rng.permutation(len(names))[:probe]]
    base_seed = 10_000 * (1 + seed)
    rollouts = [{"partner": None, **e} for e in policy_episodes(layout, None, policy, [base_seed])]
    invalid = {}
    for k, partner in enumerate(picked):
        v = check(layout.scene(partner), starts=1, seed=base_seed + 500 + k, max_steps=layout.max_steps)
        if not v.valid:
            invalid[partner] = v.error or "the expert did not solve it"
            continue
        rollouts += [{"partner": partner, **e}
                     for e in policy_episodes(layout, partner, policy, [base_seed + 1 + k])]
    diagnoses = [{"factor": f"start region of {layout.subject}", "region": layout.partners[r["partner"]],
                  "partner": r["partner"], "phase": r["phase"], "episode_seed": r["seed"]}
                 for r in rollouts if r["partner"] is not None and not r["success"]]
    verdict = None
    if diagnoses:
        d = diagnoses[0]
        seeds = [base_seed + 1000 + i for i in range(verify_n)]
        targeted = policy_episodes(layout, d["partner"], policy, seeds)
        control = policy_episodes(layout, None, policy, seeds)
        t_fail = sum(not e["success"] for e in targeted)
        c_fail = sum(not e["success"] for e in control)
        v = decide(f"{layout.task}|{d['partner']}", t_fail, len(targeted), c_fail, len(control),
                   VerifyConfig())
        verdict = {"diagnosis": 0, "status": v.status, "targeted_failures": t_fail,
                   "control_failures": c_fail, "n": verify_n, "p_value": round(v.p_value, 4),
                   "reason": v.reason}
    return {"task": layout.task, "subject": layout.subject, "held_out": layout.held_out,
            "probed": picked, "invalid": invalid, "rollouts": rollouts, "diagnoses": diagnoses,
            "verdict": verdict}


def _star(job: tuple[Any, ...]) -> Any:
    fn, *args = job
    return fn(*args)


def run_jobs(jobs: list[tuple[Any, ...]], workers: int, log: Any) -> list[Any]:
    """`(fn, *args)` jobs on `workers` spawned processes (`experiments.liberopro.spawn_map`)."""
    from experiments.liberopro import spawn_map

    out = []
    for i, r in enumerate(spawn_map(_star, jobs, workers)):
        out.append(r)
        log(f"  job {i + 1}/{len(jobs)} done")
    return out


# ---- remember and allocate ------------------------------------------------------------------------------
def modes(probes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validated diagnoses as difficulty modes: (the subject starts in region R, phase), founded on a task."""
    out = []
    for p in probes:
        v = p["verdict"]
        if v and v["status"] == "validated":
            d = p["diagnoses"][v["diagnosis"]]
            out.append({"region": d["region"], "phase": d["phase"], "founded_on": p["task"]})
    return out


def allocate(ls: list[Layout], found: list[dict[str, Any]], arm: str, demos: int, keep: float,
             seed: int) -> dict[str, list[str | None]]:
    """Per task, the scene (partner, None = the task's own) of each demonstration. `arm` "coda": `keep` of
    them on the own scene; of the rest, half (rounded up) over the partners the modes reach (cross-task:
    the object in the mode's region) and the others over every allowed partner in random order (the loop's
    exploration variants; all of them when no mode reaches the task); "original": all on the own scene."""
    rng = np.random.default_rng([seed, 2])
    out: dict[str, list[str | None]] = {}
    for lay in ls:
        if arm == "original" or not lay.partners:
            out[lay.task] = [None] * demos
            continue
        own = int(round(keep * demos))
        reached = sorted({p for m in found if (p := lay.partner_in(m["region"])) is not None})
        explore = [sorted(lay.partners)[int(i)] for i in rng.permutation(len(lay.partners))]
        n_mode = -(-(demos - own) // 2) if reached else 0
        out[lay.task] = ([None] * own + [reached[i % len(reached)] for i in range(n_mode)]
                         + [explore[i % len(explore)] for i in range(demos - own - n_mode)])
    return out


def reuse_count(ls: list[Layout], found: list[dict[str, Any]]) -> int:
    """Tasks reached by a mode founded on another task."""
    return sum(any(m["founded_on"] != lay.task and lay.partner_in(m["region"]) for m in found) for lay in ls)


# ---- train ----------------------------------------------------------------------------------------------
def fine_tune(start: Path, episodes: list[dict[str, Any]], steps: int, out: Path) -> dict[str, Any]:
    """The starting policy fine-tuned on `episodes` (its normalisation kept), saved as out/policy.pt."""
    from coda_policy.registry import load_policy
    from coda_policy.sft import SFTConfig
    from coda_policy.sft import train as sft_train
    from experiments.libero_sft import chunks

    policy = load_policy(start)
    pc = policy.config
    data = chunks(episodes, pc.chunk)
    cfg = SFTConfig(name="libero_coda", steps=steps, warmup=min(50, steps // 10), policy=pc, demos=1,
                    ema=0.99)
    speed = sft_train(policy, data, cfg)
    path = policy.save(out / "policy.pt")
    return {"policy": str(path), "chunks": int(len(data["actions"])), "train_s": round(speed["train_s"], 1)}


# ---- the round --------------------------------------------------------------------------------------------
def run(a: argparse.Namespace, log: Any = print) -> dict[str, Any]:
    from experiments.libero_sft import load_demos, save_demos
    from experiments.liberopro import evaluate, summary

    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)
    ls = layouts(a.suite)[: a.tasks]
    record_path = out / "record.json"
    rec: dict[str, Any] = json.loads(record_path.read_text()) if record_path.exists() else {}
    rec.update({"suite": a.suite, "arm": a.arm, "policy": str(a.policy), "replay": str(a.replay or ""),
                "demos": a.demos, "keep": a.keep,
                "noise": a.noise, "steps": a.steps, "probe_scenes": a.probe, "verify_n": a.verify_n,
                "seed": a.seed,
                "held_out": {lay.task: lay.held_out for lay in ls}})

    def save() -> None:
        record_path.write_text(json.dumps(rec, indent=1) + "\n")

    if a.arm == "coda" and "probe" not in rec:
        t0 = time.perf_counter()
        log(f"probe: {len(ls)} tasks, {a.probe} generated scenes each, verification n = {a.verify_n}")
        probes = run_jobs([(probe_task, lay, str(a.policy), a.probe, a.verify_n, a.seed + i)
                           for i, lay in enumerate(ls)], a.workers, log)
        rec["probe"] = {"tasks": probes, "wall_s": round(time.perf_counter() - t0, 1)}
        save()
    found = modes(rec["probe"]["tasks"]) if a.arm == "coda" else []
    rec["modes"], rec["cross_task_reuse"] = found, reuse_count(ls, found)
    plan = allocate(ls, found, a.arm, a.demos, a.keep, a.seed)
    demo_file = out / "demos.pkl"
    if not demo_file.exists():
        t0 = time.perf_counter()
        log(f"demos: {a.demos} per task ({a.arm})")
        jobs = []
        for i, lay in enumerate(ls):
            scenes: dict[str | None, list[int]] = {}
            for k, partner in enumerate(plan[lay.task]):
                scenes.setdefault(partner, []).append(20_000 * (1 + a.seed) + 100 * i + k)
            jobs += [(expert_demos, lay, partner, seeds, a.noise) for partner, seeds in scenes.items()]
        episodes = [e for batch in run_jobs(jobs, a.workers, log) for e in batch]
        if not episodes:
            raise SystemExit("error: the expert solved none of the round's demonstrations; nothing to train "
                             "on (more --demos, or less --noise)")
        save_demos(episodes, demo_file)
        rec["demos_kept"] = {"episodes": len(episodes), "planned": a.demos * len(ls),
                             "on_own_scene": sum(e["partner"] is None for e in episodes),
                             "wall_s": round(time.perf_counter() - t0, 1)}
        save()
    if not (out / "policy.pt").exists():
        episodes = load_demos(demo_file)
        replayed = load_demos(a.replay) if a.replay else []
        log(f"train: {len(episodes)} new + {len(replayed)} replayed demonstrations, {a.steps} steps from "
            f"{a.policy}")
        rec["train"] = {**fine_tune(a.policy, episodes + replayed, a.steps, out), "new": len(episodes),
                        "replayed": len(replayed)}
        save()
    rec.setdefault("evaluation", {})
    for perturb in a.perturb:
        if perturb in rec["evaluation"]:
            continue
        t0 = time.perf_counter()
        results = evaluate(a.suite, perturb, str(out / "policy.pt"), a.episodes, None, a.workers,
                           log=lambda m: log(m))
        rec["evaluation"][perturb] = {**summary(results), "per_task": {r.name: r.successes for r in results},
                                      "wall_s": round(time.perf_counter() - t0, 1)}
        save()
    return rec


def main(argv: list[str] | None = None) -> int:
    from experiments.liberopro import PERTURB, SUITES

    ap = argparse.ArgumentParser(prog="python -m experiments.libero_coda",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=SUITES, default="libero_object")
    ap.add_argument("--policy", type=Path, required=True,
                    help="the starting policy (experiments.libero_sft)")
    ap.add_argument("--arm", choices=("coda", "original"), default="coda",
                    help="coda: the round's modes decide where demonstrations go; original: the same budget "
                         "on the tasks' own scenes (the control)")
    ap.add_argument("--replay", type=Path, help="the starting policy's own demonstrations (its OUT/demos.pkl "
                    "from experiments.libero_sft), trained on again beside the round's: without them a "
                    "round's fine-tune forgets (FINDINGS #23)")
    ap.add_argument("--tasks", type=int, help="the suite's first N tasks (default all)")
    ap.add_argument("--probe", type=int, default=2, help="generated scenes rolled out per task")
    ap.add_argument("--verify-n", type=int, default=8, help="episodes per verification batch")
    ap.add_argument("--demos", type=int, default=10, help="demonstrations per task")
    ap.add_argument("--keep", type=float, default=0.3, help="share of them on the task's own scene")
    ap.add_argument("--noise", type=float, default=0.3, help="DART noise σ on the executed arm actions")
    ap.add_argument("--steps", type=int, default=600, help="fine-tune optimiser steps")
    ap.add_argument("--episodes", type=int, default=5, help="evaluation episodes per task")
    ap.add_argument("--perturb", default="none,position,instruction",
                    help="comma-separated perturbations evaluated under the protocol")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.perturb = [p.strip() for p in a.perturb.split(",") if p.strip()]
    bad = [p for p in a.perturb if p not in PERTURB]
    if bad:
        ap.error(f"--perturb {','.join(bad)}: one of {', '.join(PERTURB)}")
    if a.replay is not None and not a.replay.is_file():
        ap.error(f"--replay {a.replay}: no such file (experiments.libero_sft writes OUT/demos.pkl)")
    if not a.policy.is_file():
        ap.error(f"--policy {a.policy}: no such file (train one: python -m experiments.libero_sft ...)")
    if min(a.probe, a.demos, a.steps, a.episodes, a.workers) < 1 or a.verify_n < 4 or not 0 <= a.keep <= 1:
        ap.error("--probe, --demos, --steps, --episodes, --workers must be >= 1, --verify-n >= 4 and "
                 "--keep in [0, 1]")
    rec = run(a, log=lambda m: print(m, flush=True))
    print(json.dumps({k: rec[k] for k in ("modes", "cross_task_reuse", "evaluation") if k in rec}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
