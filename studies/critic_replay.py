"""Answers FINDINGS #2, #3 and #6. Which link fails, the critic or its test? Re-diagnose a finished run's
failed rollouts and re-verify the diagnoses with the run's own policies, under two settings side by side,
against what the run recorded.

    python -m studies.critic_replay RUN_DIR [--per-round 4] [--verify-n 12] [--workers 2]
    python -m studies.critic_replay RUN_DIR --id-only # the critic's edits clamped to the ID range
    python -m studies.critic_replay RUN_DIR --arms    # variant arms vs the seed program vs the ID edge

For every round r ≥ 1 of RUN_DIR (a run directory of the rules critic, e.g. a Table 1 cell):

- **failures**: the round's failed rollouts on training scenes, as many per round as the loop diagnoses
  (`--per-round`, taken the way the `diagnose` node takes them: interleaved across arms);
- **critic**: the rules critic on each failure *alone* (the episode's own evidence, as the loop ran until
  this commit) and *with peers* (the round's other rollouts of the family: `agents.critic.summary.
  with_peers`);
- **accuracy against planted causes**: a `var_<factor>_<side>` arm is a seed program with one factor moved
  into one band. Where that arm failed at least 30 pp more often than the family's seed arm in the same
  round, the planted factor is the known cause of its failures; accuracy = the critic names it;
- **verification** of each diagnosis on the family's seed program with the policy the round started from
  (`policy/round_{r-1}.safetensors`), n episodes per batch, α = 0.1: verdict counts per setting, beside
  the verdicts the run itself recorded (on the arm's own program, with the critic alone).

Nothing here reads the frozen evaluation suites. The contrast weight of the peer evidence was set by
reasoning, then checked with this command on one Table 1 cell; the report says which run it read.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser, worker_count


def _flat(scene: dict[str, Any]) -> dict[str, Any]:
    return {k: v for group in (scene.get("factors") or {}).values() for k, v in group.items()}


def _arm(scene_path: Path) -> str:
    """The arm tag in a scene file name `<family>_<tag>_<scene id>.json`."""
    stem = scene_path.stem
    family = max((f for f in _FAMILIES if stem.startswith(f + "_")), key=len)
    rest = stem[len(family) + 1:]
    return rest[:rest.rindex("_")]


_FAMILIES: set[str] = set()


def load_round(run: Path, r: int) -> list[dict[str, Any]]:
    """Every rollout of round r: episode path, family, arm, success, failing phase, flat factors."""
    scenes = {p.stem.rsplit("_", 1)[-1]: p for p in (run / "scenes" / f"round_{r:02d}").glob("*.json")}
    rows = []
    for meta_path in sorted((run / "episodes" / f"round_{r:02d}").glob("roll_*.json")):
        meta = json.loads(meta_path.read_text())
        scene_file = scenes.get(meta["scene_id"])
        if scene_file is None:
            continue
        scene = json.loads(scene_file.read_text())
        rows.append({"episode": meta_path.with_suffix(".npz"), "family": meta["family"],
                     "arm": _arm(scene_file), "success": bool(meta["success"]),
                     "phase": meta.get("failing_phase"), "factors": _flat(scene)})
    return rows


def pick_failures(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Failed rollouts interleaved across (family, arm), at most k (as the `diagnose` node picks)."""
    queues: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if not row["success"]:
            queues[(row["family"], row["arm"])].append(row)
    out: list[dict[str, Any]] = []
    qs = list(queues.values())
    while any(qs) and len(out) < k:
        for q in qs:
            if q and len(out) < k:
                out.append(q.pop(0))
    return out


def planted_cause(rows: list[dict[str, Any]], family: str, arm: str) -> str | None:
    """The planted factor of a hard single-factor variant arm (≥ 30 pp more failures than the seed arm), else
    None (also for a variant that moves several factors, `var_a_low__b_high`: no one planted cause)."""
    m = re.fullmatch(r"var_(.+)_(low|high|[a-z0-9]+)", arm)
    if m is None or "__" in arm:
        return None

    def fail_rate(a: str) -> float | None:
        got = [not x["success"] for x in rows if x["family"] == family and x["arm"] == a]
        return sum(got) / len(got) if got else None

    var, seed = fail_rate(arm), fail_rate("seed")
    if var is None or seed is None or var < seed + 0.3:
        return None
    factors = next(x["factors"] for x in rows if x["family"] == family and x["arm"] == arm)
    name = m.group(1)
    while name and name not in factors:  # choice variants: var_<factor>_<value with underscores>
        name = name.rsplit("_", 1)[0] if "_" in name else ""
    return name or None


def arm_check(run: Path, n: int, workers: int) -> list[dict[str, Any]]:
    """For each single-factor variant arm of each round: success of the policy that round started from on
    n scenes of the arm's own program, of the family's seed program, and of the seed program with that
    factor moved to the same side's edge band of its ID range (the most a diagnosis clamped to the ID
    range can express)."""
    from coda_policy.awr import SeededPolicy
    from programs.edits import edit
    from programs.factor_space import band_edit, reference
    from programs.render import load_program
    from programs.seeds import seed_library
    from sandbox import PoolConfig, SandboxPool, SandboxTask
    from sim.pool import EpisodeJob, EpisodePool

    def rate(sandbox: Any, pool: Any, program: Any, policy: Any) -> tuple[int, int]:
        tasks = [SandboxTask(source=program.source, factors=program.sample_factors(np.random.default_rng(s)),
                             seed=s) for s in range(n)]
        scenes = [res.scenes[0] for res in sandbox.run_many(tasks) if res.ok]
        done = pool.run([EpisodeJob(scene=sc, policy=policy) for sc in scenes])
        return sum(d.success for d in done), len(done)

    out = []
    with SandboxPool(PoolConfig(workers=1)) as sandbox, EpisodePool(workers) as pool:
        r = 1
        while (run / "programs" / f"round_{r:02d}").is_dir():
            policy = SeededPolicy(str(run / "policy" / f"round_{r - 1:02d}.safetensors"), 11)
            for path in sorted((run / "programs" / f"round_{r:02d}").glob("gen_var_*.json")):
                m = re.fullmatch(r"gen_var_(.+)_(low|high)_[0-9a-f]+", path.stem)
                if m is None:
                    continue
                arm = load_program(path)
                seed = seed_library()[arm.family][0]
                name, side = m.group(1), m.group(2)
                ref = reference(seed, name)
                lo, hi = ref.range  # type: ignore[misc]
                edge = band_edit(ref, lo if side == "low" else hi, -1 if side == "low" else 1, band=0.25,
                                 allow_ood=False)
                at_edge = edit(seed, name, edge, diagnosis="ID edge")
                row = {"round": r, "family": arm.family, "arm": f"var_{name}_{side}",
                       "arm_range": arm.factor(name).range, "edge_band": edge,
                       "arm_success": rate(sandbox, pool, arm, policy),
                       "seed_success": rate(sandbox, pool, seed, policy),
                       "edge_success": rate(sandbox, pool, at_edge, policy)}
                print(json.dumps(row), flush=True)
                out.append(row)
            r += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.critic_replay", __doc__)
    ap.add_argument("run", type=Path, help="a finished run directory (rules critic)")
    ap.add_argument("--per-round", type=int, default=4, help="failures per round (the loop's diagnose_max)")
    ap.add_argument("--verify-n", type=int, default=12, help="episodes per verification batch")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--out", type=Path, help="write the report JSON here")
    ap.add_argument("--arms", action="store_true", help="only the arm check (see `arm_check`)")
    ap.add_argument("--no-verify", action="store_true",
                    help="only the critic: every failure of every round, planted-cause accuracy, no rollouts")
    ap.add_argument("--id-only", action="store_true",
                    help="keep the critic's edits inside the ID range (the loop before e11f6e6)")
    a = ap.parse_args(argv)
    if not (a.run / "episodes").is_dir():
        print(f"error: {a.run} is not a run directory with episodes", file=sys.stderr)
        return 2
    if a.arms:
        rows = arm_check(a.run, a.verify_n, a.workers)
        if a.out:
            a.out.write_text(json.dumps(rows, indent=1) + "\n")
        return 0

    from agents.critic.diagnose import diagnose
    from agents.critic.verify import VerifyConfig, episode_rollout, run_verification, sandbox_run_batch
    from coda_policy.awr import SeededPolicy
    from programs.seeds import seed_library
    from sandbox import PoolConfig, SandboxPool
    from sim.episode import Episode
    from sim.families.base import FAMILIES
    from sim.pool import EpisodePool

    _FAMILIES.update(FAMILIES.names())
    from agents.config import RunConfig

    critic_cfg = RunConfig().critic  # the loop's own critic settings (OOD edits allowed)
    if a.id_only:
        critic_cfg = dataclasses.replace(critic_cfg, allow_ood=False)
    seeds = {f: progs[0] for f, progs in seed_library().items()}
    report: dict[str, Any] = {"run": str(a.run), "per_round": a.per_round, "verify_n": a.verify_n,
                              "allow_ood": critic_cfg.allow_ood, "rounds": {}}
    totals: dict[str, Counter] = {"alone": Counter(), "peers": Counter(), "recorded": Counter()}
    acc: dict[str, list[bool]] = {"alone": [], "peers": []}
    with SandboxPool(PoolConfig(workers=1)) as sandbox, EpisodePool(a.workers) as pool:
        r = 1
        while (a.run / "episodes" / f"round_{r:02d}").is_dir():
            rows = load_round(a.run, r)
            policy = SeededPolicy(str(a.run / "policy" / f"round_{r - 1:02d}.safetensors"), 11)
            batch = sandbox_run_batch(sandbox, episode_rollout(pool, policy))
            items = []
            picked = [x for x in rows if not x["success"]] if a.no_verify else \
                pick_failures(rows, a.per_round)
            for fail in picked:
                ep = Episode.load(fail["episode"])
                program = seeds[fail["family"]]
                peers = [(x["factors"], x["success"]) for x in rows
                         if x["family"] == fail["family"] and x["episode"] != fail["episode"]]
                cause = planted_cause(rows, fail["family"], fail["arm"])
                item: dict[str, Any] = {"episode": fail["episode"].name, "family": fail["family"],
                                        "arm": fail["arm"], "planted": cause}
                recorded = a.run / "diagnoses" / f"round_{r:02d}" / fail["episode"].with_suffix(".json").name
                if recorded.exists():
                    v = json.loads(recorded.read_text()).get("verdict") or {}
                    item["recorded"] = v.get("status", "unverified")
                    totals["recorded"][item["recorded"]] += 1
                for setting, given in (("alone", ()), ("peers", peers)):
                    dx = diagnose(ep, program, critic="rules", config=critic_cfg,
                                  episode_id=fail["episode"].stem, peers=given)
                    if cause is not None:
                        acc[setting].append(dx.factor == cause)
                    if a.no_verify:
                        item[setting] = {"factor": dx.factor, "phase": dx.phase}
                        continue
                    rng = np.random.default_rng([r, len(items)])
                    ver = run_verification(dx, program, batch, n=a.verify_n, rng=rng,
                                           config=VerifyConfig(alpha=0.1, critic=critic_cfg))
                    v = ver.verdict
                    item[setting] = {"factor": dx.factor, "phase": dx.phase, "status": v.status,
                                     "targeted": round(v.targeted_failure_rate, 3),
                                     "control": round(v.control_failure_rate, 3), "reason": v.reason}
                    totals[setting][v.status] += 1
                items.append(item)
                print(json.dumps(item), flush=True)
            report["rounds"][str(r)] = items
            r += 1
    report["verdicts"] = {k: dict(v) for k, v in totals.items()}
    report["planted_accuracy"] = {k: {"correct": sum(v), "of": len(v)} for k, v in acc.items()}
    print(json.dumps({"verdicts": report["verdicts"], "planted_accuracy": report["planted_accuracy"]},
                     indent=1))
    if a.out:
        a.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
