"""Answers FINDINGS #25 and #26. Does the weighted update's critic rank a round's own rollouts by their
outcome? Re-fit on finished cells.

    python -m studies.critic_rank --runs runs/table1_default/coda_seed3,runs/table1_default/coda_seed4
    python -m studies.critic_rank --runs RUN --rounds 2 --variants program,per_stage,sparse --out F.json
    python -m studies.critic_rank --recorded --runs RUN1,RUN2   # what the loop's updates recorded

For every listed run (a finished `agents.run` directory of a weighted-update method) and round, the inputs of
that round's `train` node are read back from its checkpoint — the same groups of episodes and training
programs `agents.graph.nodes.learn` gave the trainer — and the chunk critic is fitted again exactly as the
trainer fits it (cross-fitted over episodes, `LearnConfig`'s critic settings), once per shaping variant:

- `program`: Text2potential with the training programs' own β (what the loop ran);
- `per_stage`: Text2potential with β = 1/m for a program of m subgoals, so βΦ ∈ [0, 1] — the scale of the
  sparse success reward it is added to (`coda_policy.shaping`'s `text2potential_unit`);
- `sparse`: the verifier's reward alone (Φ ≡ 0);
- `program_feature`: `program`, with βΦ at both ends of a chunk given to the critic as an input
  (`ChunkCriticConfig.potential_feature`): the shaped value carries a −βΦ(s) offset that the critic otherwise
  has to infer from the policy's pooled features.

Reported per variant: the mean normalised Â of demonstration chunks and of rollout chunks from successful and
from failed episodes (`coda_policy.advantages.advantage_groups`: a critic that learned anything ranks them
demo ≳ success > failure), and the probability that a random successful-rollout chunk gets a higher Â than a
random failed-rollout chunk (AUC; 0.5 is no ranking). The policy is not updated and no frozen suite is read:
this measures the critic on the loop's own training data.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from common.cli import comma_list, command_parser
from common.markdown import md_table

# variant → (shaping mode, βΦ as a critic input: `ChunkCriticConfig.potential_feature`)
VARIANTS = {"program": ("text2potential", False), "per_stage": ("text2potential_unit", False),
            "sparse": ("sparse", False), "program_feature": ("text2potential", True)}


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a random `pos` value > a random `neg` value), ties counted half (Mann-Whitney)."""
    if not len(pos) or not len(neg):
        return float("nan")
    both = np.concatenate([pos, neg])
    ranks = np.argsort(np.argsort(both, kind="mergesort"), kind="mergesort").astype(float) + 1
    for v in np.unique(both):  # average ranks of ties
        tie = both == v
        ranks[tie] = ranks[tie].mean()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def measure(run: Path, round_no: int, variants: list[str]) -> list[dict[str, Any]]:
    """One row per variant: the critic's Â by chunk source on the round's training data."""
    import torch

    from agents.graph.nodes.learn import aw_groups
    from agents.graph.nodes.work import stable_seed
    from agents.graph.rundir import RunDir
    from agents.graph.trainer import _concat
    from agents.replay import node_inputs
    from coda_policy.advantages import (
        advantage_groups,
        build_table,
        critic_inputs,
        crossfit_advantages,
        normalise,
    )
    from coda_policy.awr import load_seeded
    from coda_policy.critic import ChunkCriticConfig
    from coda_policy.shaping import ShapingConfig, shape_episodes
    from sim.episode import Episode

    cfg, state = node_inputs(run, round_no)
    lc = cfg.learn
    torch.set_num_threads(lc.policy.torch_threads)
    groups = aw_groups(SimpleNamespace(run=RunDir(run), config=cfg), state)
    seed = stable_seed(cfg.seed, round_no, "train")
    policy = load_seeded(RunDir(run).abs(state["policy"]), seed, fresh=True)
    pc = policy.config
    loaded = [(program, [Episode.load(p) for p in paths]) for program, paths in groups]
    rows = []
    for variant in variants:
        t0 = time.perf_counter()
        batches, episodes = [], []
        for program, eps in loaded:
            shaped = shape_episodes(eps, ShapingConfig(mode=VARIANTS[variant][0]), program, h=pc.chunk,
                                    demo_stride=lc.demo_stride, rollout_stride=pc.execute)
            batches.append((len(episodes), shaped))
            episodes += eps
        chunks = _concat(batches)
        table = build_table(episodes, chunks, policy)
        critic_cfg = ChunkCriticConfig(hidden=lc.critic_hidden, steps=lc.critic_steps,
                                       batch_size=lc.critic_batch, seed=seed,
                                       potential_feature=VARIANTS[variant][1])
        data = critic_inputs(policy, table, critic_cfg.potential_feature)
        adv, cm = crossfit_advantages(data, chunks.episode, critic_cfg, lc.awr_folds, lc.device)
        a = normalise(adv).numpy()
        demo, success = np.asarray(chunks.demo, bool), np.asarray(chunks.success, bool)
        rows.append({"run": str(run), "method": cfg.method, "round": round_no, "variant": variant,
                     "chunks": int(len(chunks)), "rollout_success_chunks": int((~demo & success).sum()),
                     "rollout_failure_chunks": int((~demo & ~success).sum()),
                     **advantage_groups(adv, chunks),
                     "auc_success_over_failure": auc(a[~demo & success], a[~demo & ~success]),
                     "explained_var": float(cm.get("explained_var", float("nan"))),
                     "seconds": round(time.perf_counter() - t0, 1)})
    return rows


def recorded(runs: list[Path]) -> list[dict[str, Any]]:
    """The same Â groups as each weighted update recorded them while the loop ran (`train/round_XX.json`; no
    AUC there), one row per (run, round), the variant being the shaping the run used."""
    rows = []
    for run in runs:
        for path in sorted(run.glob("train/round_*.json")):
            m = json.loads(path.read_text())
            if m.get("update") != "aw" or "adv_rollout_success" not in m:
                continue
            variant = {"text2potential": "program", "text2potential_unit": "per_stage"}.get(m["shaping"],
                                                                                          m["shaping"])
            rows.append({"run": str(run), "round": int(path.stem.split("_")[1]), "variant": variant,
                         **{k: m[k] for k in ("adv_demo", "adv_rollout_success", "adv_rollout_failure")},
                         "auc_success_over_failure": float("nan")})
    return rows


def _auc(v: float) -> str:
    return "–" if np.isnan(v) else f"{v:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r)
    out = []
    for v, rs in by.items():
        def mean(k: str, rs: list[dict[str, Any]] = rs) -> float:
            vals = [r[k] for r in rs if not np.isnan(r[k])]
            return float(np.mean(vals)) if vals else float("nan")

        above = sum(r["adv_rollout_success"] > r["adv_rollout_failure"] for r in rs)
        out.append((v, len(rs), f"{mean('adv_demo'):+.2f}", f"{mean('adv_rollout_success'):+.2f}",
                    f"{mean('adv_rollout_failure'):+.2f}", _auc(mean("auc_success_over_failure")),
                    f"{above}/{len(rs)}"))
    header = ("variant", "cells × rounds", "Â demo", "Â rollout success", "Â rollout failure",
              "AUC success > failure", "success ranked above failure")
    return "\n".join(md_table(header, out))


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.critic_rank", __doc__)
    ap.add_argument("--runs", type=comma_list(Path), required=True, help="comma-separated run directories")
    ap.add_argument("--rounds", type=comma_list(int), default=[1, 2], help="comma-separated rounds (1,2)")
    ap.add_argument("--variants", type=comma_list(choices=list(VARIANTS)), default=list(VARIANTS),
                    help=f"comma-separated of {', '.join(VARIANTS)}")
    ap.add_argument("--recorded", action="store_true",
                    help="fit nothing: the groups each run's weighted updates recorded (train/round_XX.json)")
    ap.add_argument("--out", type=Path, help="write every row and the command here (JSON)")
    a = ap.parse_args(argv)
    if a.recorded:
        print(table(recorded(a.runs)))
        return 0
    missing = [str(r) for r in a.runs if not (r / "trace.sqlite").is_file()]
    if missing:
        print(f"error: not run directories (no trace.sqlite): {', '.join(missing)}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for run in a.runs:
        for r in a.rounds:
            try:
                got = measure(run, r, a.variants)
            except ValueError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            for row in got:
                print(f"{run.name} round {r} {row['variant']}: Â success {row['adv_rollout_success']:+.2f}, "
                      f"failure {row['adv_rollout_failure']:+.2f}, AUC {row['auc_success_over_failure']:.2f}",
                      flush=True)
            rows += got
            if a.out:
                a.out.parent.mkdir(parents=True, exist_ok=True)
                a.out.write_text(json.dumps({"command": "python -m studies.critic_rank "
                                             + " ".join(argv if argv is not None else sys.argv[1:]),
                                             "rows": rows}, indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
