"""Helpers for the graph tests: real sandbox, simulator and memory, a torch-free trainer, episodes in the
test process (no spawned workers), and the smoke preset cut down to seconds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from agents.config import RunConfig, get_preset
from agents.graph.build import build_graph, open_checkpointer, thread_config
from agents.graph.state import initial_state


def config(method: str = "coda", **over: Any) -> RunConfig:
    """The smoke preset: one round, episodes in this process, short rollouts (enough for fake policies)."""
    base = dataclasses.replace(get_preset("smoke"), method=method, rounds=1, workers=0, seed_demos=2,
                               eval_id=1, eval_ood=1, oversample=1.0, rollout_max_steps=40)
    return dataclasses.replace(base, **over)


def run_graph(deps: Any, *, resume: bool = False) -> dict[str, Any]:
    """Compile with a SQLite checkpointer in the run directory and run to the end."""
    with open_checkpointer(deps.run.root) as saver:
        app = build_graph(deps).compile(checkpointer=saver)
        start = None if resume else initial_state(deps.config.rounds)
        return app.invoke(start, thread_config(), durability="sync")


def accepted_per_family(slots: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in slots:
        out[s["family"]] = out.get(s["family"], 0) + len(s["accepted"])
    return out


def files(root: Path, pattern: str) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.glob(pattern))
