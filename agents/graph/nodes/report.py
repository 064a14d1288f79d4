"""`report`: close a round — its row in metrics.jsonl (outcomes and per-node cost), report.html, the
summary table on the console, and a snapshot of memory that a fork from this round boundary restores."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Mapping
from typing import Any

from agents.graph.deps import Deps
from agents.graph.nodes.diagnose import verdict_counts
from agents.graph.nodes.rollout import outcomes, scene_id
from agents.graph.rundir import append_metrics
from agents.graph.state import RoundState

COST_KEYS = ("wall_s", "llm_calls", "tokens_in", "tokens_out", "sim_steps", "episodes", "sandbox_runs")
FALLBACK_REASONS = ("writer", "checks", "sandbox", "invalid_scenes")  # `agents.graph.state.SlotFailure`


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _generation(state: RoundState) -> dict[str, Any]:
    slots = state.get("slots", [])
    accepted: Counter[str] = Counter()
    for s in slots:
        accepted[s["family"]] += len(s["accepted"])
    return {"accepted": dict(accepted), "slots": len(slots),
            "slots_failed": [f"{s['mode_id']}|{s['family']}: {s['error'][:200]}" for s in slots
                             if s["status"] == "failed"],
            "backfilled": sum(s["n"] for s in slots if s["backfill_for"]),
            "retries": sum(max(0, s["attempts"] - 1) for s in slots),
            "arms": [f"{s['mode_id']}|{s['family']}×{s['n']}" for s in slots]}


def _fallbacks(state: RoundState) -> dict[str, Any]:
    """Generation slots whose share of the budget went to the seed distribution (a back-fill slot made up
    their shortfall), counted by the kind of their last error; and compiled modes whose training program
    fell back to the family's seed program. Nonzero counts mean the round ran partly as the seed
    baseline."""
    slots = state.get("slots", [])
    filled = {(s["family"], s["backfill_for"]) for s in slots if s["backfill_for"]}
    fell = [s for s in slots if s["status"] == "failed" and (s["family"], s["mode_id"]) in filled]
    reasons = dict.fromkeys(FALLBACK_REASONS, 0)
    for s in fell:
        why = s.get("failure") or "unknown"  # a slot from a checkpoint written before the key existed
        reasons[why] = reasons.get(why, 0) + 1
    return {"slots": len(fell), "reasons": reasons,
            "training_programs": sum(1 for c in state.get("compiled", []) if c.get("fallback"))}


def _unusable(state: RoundState) -> dict[str, int]:
    """Critic and writer answers (LLM answers, or a rules agent's "no answer") that could not be used."""
    counts = state.get("unusable_answers", {})
    return {"critic": counts.get("critic", 0), "writer": counts.get("writer", 0)}


def _rollouts(deps: Deps, state: RoundState) -> dict[str, Any]:
    by_scene = outcomes(deps, state.get("rollouts", []))
    train = [by_scene[scene_id(s)].success for slot in state.get("slots", []) for s in slot["accepted"]
             if scene_id(s) in by_scene]
    return {"rollouts": len(by_scene), "rollout_errors": state.get("rollout_failures", 0),
            "train_success_before": _mean([float(x) for x in train])}


def _critic(deps: Deps, state: RoundState) -> dict[str, Any]:
    files = state.get("diagnoses", [])
    counts = verdict_counts(deps, files)
    judged = counts["validated"] + counts["refuted"] + counts["inconclusive"]
    out: dict[str, Any] = {"diagnoses": len(files), "critic_failures": len(state.get("critic_failures", [])),
                           "verdicts": counts,
                           "refuted_pct": round(100 * counts["refuted"] / judged, 1) if judged else None,
                           "validated_modes": list(state.get("modes", [])),
                           "compiled": state.get("compiled", [])}
    if deps.memory is not None:
        out["memory"] = deps.memory.counts()
    return out


def cost_total(cost: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Sum of every node's cost."""
    return {k: round(sum(c.get(k, 0) for c in cost.values()), 3) for k in COST_KEYS}


def round_row(state: RoundState, deps: Deps) -> dict[str, Any]:
    """The round's row of metrics.jsonl."""
    cfg, measured = deps.config, state.get("measured", {})
    ev = measured.get("eval", {})
    arms = measured.get("arms", [])
    row: dict[str, Any] = {
        "round": state.get("round", 0), "method": cfg.method, "preset": cfg.preset, "llm": cfg.llm,
        "policy": state.get("policy", ""), "budget_per_family": cfg.budget,
        "eval": ev, "eval_id": _mean([v["id"] for v in ev.values() if "id" in v]),
        "eval_ood": _mean([v["ood"] for v in ev.values() if "ood" in v]),
        "arms": arms, "held_before": _mean([a["before"] for a in arms if a["before"] is not None]),
        "held_after": _mean([a["after"] for a in arms]),
        "train": state.get("train_metrics", {}),
        "cost": state.get("cost", {}), "cost_total": cost_total(state.get("cost", {})),
    }
    if row["round"] > 0:
        row.update(generation=_generation(state), **_rollouts(deps, state), critic=_critic(deps, state),
                   fallbacks=_fallbacks(state), unusable_answers=_unusable(state))
    return row


def report(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Write the round's row, report.html and (with memory) a memory snapshot; print the summary table."""
    from agents.graph.report_page import write_report

    row = round_row(state, deps)
    append_metrics(deps.run.metrics, row)
    write_report(deps.run, deps.config)
    if deps.run.memory.exists():  # Chroma store (CoDA) and ledger.json (every method)
        snap = deps.run.dir("snapshots") / f"round_{row['round']:02d}" / "memory"
        if snap.exists():
            shutil.rmtree(snap)
        shutil.copytree(deps.run.memory, snap)
    deps.reporter.round_end(row)
    return {"metrics": row}


def summary(update: Mapping[str, Any]) -> str:
    m = update.get("metrics", {})
    return f"round {m.get('round')} written to metrics.jsonl (OOD {m.get('eval_ood')})"
