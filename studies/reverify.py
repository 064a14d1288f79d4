"""Answers FINDINGS #16. Verify a finished run's recorded diagnoses again under another verification rule,
beside the verdicts the run recorded.

    python -m studies.reverify RUN_DIR --round 1 --control moveback
    python -m studies.reverify RUN_DIR --round 1 --count named --out FILE
    python -m studies.reverify RUN_DIR --round 2 --control other --at-ceiling without_context
    python -m studies.reverify DIR --summarize     # the --out files in DIR: verdicts before → after

Each diagnosis file of the round (`diagnoses/round_XX/*.json`) is verified as the loop's `verify` node
did — on the family's seed program with the diagnosis's context held, with the policy the round started
from (`policy/round_{r-1}.safetensors`), `--n` episodes per batch (default: the run's `verify_n`), the
run's α — except for what the flags change: the control batch (`--control other|moveback`) and which
failures count (`--count any|named`), and what a control at its ceiling under the diagnosis's context
leads to (`--at-ceiling inconclusive|without_context`, `VerifyConfig.at_ceiling`). Nothing is written into
the run. Seeds are the loop's per diagnosis, so the targeted batch is the one the run drew when the rule
for it did not change.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser, worker_count


def reverify(run: Path, round_no: int, *, control: str, count: str, n: int | None, workers: int,
             at_ceiling: str = "inconclusive", log: Any = print) -> dict[str, Any]:
    """Every diagnosis of the round, recorded verdict beside the new one."""
    from agents.config import RunConfig
    from agents.critic.verify import episode_rollout, loop_config, run_verification, sandbox_run_batch
    from agents.graph.nodes.work import stable_seed
    from coda_policy.awr import SeededPolicy
    from memory.types import Diagnosis
    from programs.seeds import background_program
    from sandbox.pool import PoolConfig, SandboxPool
    from sim.pool import EpisodePool

    cfg = RunConfig.from_json((run / "config.json").read_text())
    files = sorted((run / "diagnoses" / f"round_{round_no:02d}").glob("*.json"))
    if not files:
        raise FileNotFoundError(f"{run} has no diagnoses for round {round_no}")
    policy = run / "policy" / f"round_{round_no - 1:02d}.safetensors"
    n = n or cfg.verify_n
    config = loop_config(cfg.verify, cfg.critic, alpha=cfg.verify_alpha, n=n, count=count, control=control,
                         at_ceiling=at_ceiling)
    rows = []
    with SandboxPool(PoolConfig(workers=workers)) as sandbox, EpisodePool(workers) as pool:
        for f in files:
            rec = json.loads(f.read_text())
            dx = Diagnosis.model_validate(rec["diagnosis"])
            rng = np.random.default_rng(stable_seed(cfg.seed, round_no, dx.id))
            # the policy and its sampling seed as the loop's verify node gave them (`make_run_batch`)
            factory = SeededPolicy(str(policy), stable_seed(cfg.seed, dx.id))
            rollout = episode_rollout(pool, factory, max_steps=cfg.rollout_max_steps)
            batch = sandbox_run_batch(sandbox, rollout)
            # the run's factor space and background, as the loop's node
            base = background_program(rec["family"], cfg.background, cfg.dr_widen, cfg.space)
            res = run_verification(dx, base, batch, n=n, rng=rng, config=config)
            old = rec.get("verdict") or {}
            row = {"episode": rec["episode"], "family": rec["family"], "slot": rec["slot"],
                   "factor": dx.factor, "phase": dx.phase, "context": sorted(set(dx.edit) - {dx.factor}),
                   "recorded": old.get("status"), "recorded_rates": [old.get("targeted_failure_rate"),
                                                                      old.get("control_failure_rate")],
                   "status": res.verdict.status, "rates": [res.verdict.targeted_failure_rate,
                                                           res.verdict.control_failure_rate],
                   "p": round(res.verdict.p_value, 4), "control_factor": res.control_factor,
                   "context_dropped": res.verdict.context_dropped, "reason": res.verdict.reason}
            rows.append(row)
            log(f"{rec['family']:12s} {dx.factor:12s} recorded {row['recorded']} "
                f"{_rates(row['recorded_rates'])} → {row['status']} {_rates(row['rates'])}")
    return {"run": str(run), "round": round_no, "control": control, "count": count, "at_ceiling": at_ceiling,
            "n": n,
            "alpha": config.alpha, "policy": str(policy), "rows": rows,
            "recorded": dict(Counter(r["recorded"] for r in rows)),
            "now": dict(Counter(r["status"] for r in rows))}


def summarize(folder: Path) -> str:
    """Markdown of the `--out` files in `folder`: recorded verdict → this rule's, counted over every
    diagnosis, and the diagnoses tested again without their context, one line each."""
    from common.markdown import md_table

    results = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    if not results:
        raise FileNotFoundError(f"{folder} holds no reverify results (*.json)")
    rows = [(r["run"], r["round"], row) for r in results for row in r["rows"]]
    moves = Counter((row["recorded"], row["status"]) for _, _, row in rows)
    head = ("recorded", "now", "diagnoses")
    out = [f"{len(rows)} diagnoses of {len(results)} run rounds; rules: "
           + ", ".join(sorted({f"control {r['control']}, count {r['count']}, at ceiling "
                               f"{r.get('at_ceiling', 'inconclusive')}, n {r['n']}" for r in results})), "",
           *md_table(head, [(a, b, n) for (a, b), n in sorted(moves.items())]), ""]
    dropped = [(run, rnd, row) for run, rnd, row in rows if row.get("context_dropped")]
    if dropped:
        out += [f"Tested again without their context ({len(dropped)}):", "",
                *md_table(("run", "round", "family", "factor", "context", "under it", "alone", "now"),
                          [(Path(run).name, rnd, row["family"], f"`{row['factor']}`", len(row["context"]),
                            _rates(row["recorded_rates"]), _rates(row["rates"]), row["status"])
                           for run, rnd, row in dropped]), ""]
    return "\n".join(out)


def _rates(r: list[float | None]) -> str:
    return "–" if None in r else f"{100 * r[0]:.0f}% vs {100 * r[1]:.0f}%"  # type: ignore[operator]


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.reverify", __doc__)
    ap.add_argument("run", type=Path, help="a run directory whose round has diagnosis files (with "
                                           "--summarize: the folder of --out files)")
    ap.add_argument("--summarize", action="store_true", help="summarize the --out files in RUN instead")
    ap.add_argument("--round", type=int, default=1, help="the round whose diagnoses to verify (>= 1)")
    ap.add_argument("--control", choices=("other", "moveback"), default="moveback")
    ap.add_argument("--count", choices=("any", "named"), default="any")
    ap.add_argument("--at-ceiling", choices=("inconclusive", "without_context"), default="inconclusive",
                    help="a control at its ceiling under the context: as it stands, or the factor tested "
                         "again alone")
    ap.add_argument("--n", type=int, help="episodes per batch (default: the run's verify_n)")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    a = ap.parse_args(argv)
    if a.summarize:
        try:
            print(summarize(a.run))
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if a.round < 1 or (a.n is not None and a.n < 1):
        ap.error("--round and --n must be >= 1")
    if not (a.run / "config.json").is_file():
        ap.error(f"{a.run} is not a run directory (no config.json)")
    try:
        res = reverify(a.run, a.round, control=a.control, count=a.count, n=a.n, workers=a.workers,
                       at_ceiling=a.at_ceiling)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"recorded {res['recorded']} → now {res['now']} (control {a.control}, count {a.count}, "
          f"at ceiling {a.at_ceiling}, n {res['n']})")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
