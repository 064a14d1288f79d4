"""Helpers for the graph and node tests: real sandbox, simulator and memory, a torch-free trainer, episodes in
the test process (no spawned workers), the smoke preset cut down to seconds; `node_deps` (a sandbox that
builds scenes without running programs) and `call` (a node called directly, its input checked unchanged)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents.config import RunConfig, get_preset
from agents.graph.build import build_graph, open_checkpointer, thread_config
from agents.graph.deps import Deps
from agents.graph.rundir import RunDir
from agents.graph.state import initial_state
from tests.fakes.agents import ScriptedAgents
from tests.fakes.trainer import FakeTrainer

ALWAYS_FAILS = -1.0  # yaw limit of the fake policy: every rollout fails, so the critic has work


def config(method: str = "coda", **over: Any) -> RunConfig:
    """The smoke preset: one round, episodes in this process, short rollouts (enough for fake policies)."""
    base = dataclasses.replace(get_preset("smoke"), method=method, rounds=1, workers=0, seed_demos=2,
                               eval_id=1, eval_ood=1, oversample=1.0, rollout_max_steps=40)
    return dataclasses.replace(base, **over)


@contextlib.contextmanager
def node_deps(root: Path, method: str = "coda", *, agents: Any = None, trainer: Any = None,
              **over: Any) -> Iterator[Deps]:
    """`Deps` for calling nodes directly: `config(method, **over)`, scripted agents, the torch-free trainer, a
    sandbox that builds each scene with the family's `make_scene` (no process, no program run), episodes
    in this process, real memory (methods with memory) and ledger in `root`."""
    from memory.ledger import Ledger
    from sim.pool import EpisodePool
    from tests.fakes.agents_fakes import FakeSandboxPool

    cfg = config(method, **over)
    run = RunDir(root)
    run.root.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        memory = None
        if cfg.method_config.memory:
            from memory import Memory

            memory = stack.enter_context(Memory(run.memory))
        ledger = memory.ledger if memory is not None else Ledger(run.memory / "ledger.json")
        yield Deps(config=cfg, run=run, sandbox=FakeSandboxPool(), episodes=EpisodePool(0),
                   trainer=trainer or FakeTrainer(ALWAYS_FAILS), agents=agents or ScriptedAgents(),
                   memory=memory, ledger=ledger)


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


def call(node: Any, state: dict[str, Any], deps: Any) -> dict[str, Any]:
    """`node(state, deps)` as the graph calls it, failing if the node changed its input state (a node returns
    a partial update and never mutates what it was given)."""
    import copy

    before = copy.deepcopy(state)
    update = node(state, deps)
    assert state == before, f"{getattr(node, '__name__', node)} mutated its input state"
    return dict(update)
