"""Routing: small pure functions of the state (and of the method, bound when the graph is built).

    START → bootstrap → report ─┬→ allocate → generate → validate ─┬→ generate  (a slot retries)
                                └→ END (last round)                 └→ rollout
    rollout ─┬→ diagnose → verify → remember → compile → train
             └→ train  (methods without a critic)
    train → measure → report
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

END = "__end__"  # langgraph.graph.END


def after_report(state: Mapping[str, Any]) -> str:
    """Another round, or the end of the run."""
    return "allocate" if state.get("round", 0) < state.get("rounds", 0) else END


def after_validate(state: Mapping[str, Any]) -> str:
    """Back to the writer while a slot still has a try left, else on to the rollouts."""
    waiting = any(s["status"] in ("pending", "retry") for s in state.get("slots", []))
    return "generate" if waiting else "rollout"


def after_rollout(state: Mapping[str, Any], *, diagnose: bool) -> str:
    """Through the critic for methods that have one; straight to training for the others."""
    del state  # the method decides, not the state
    return "diagnose" if diagnose else "train"
