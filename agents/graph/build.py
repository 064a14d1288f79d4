"""`build_graph(deps)`: the co-evolution loop as a LangGraph `StateGraph` (uncompiled). The caller
compiles it with a checkpointer in the run directory:

    with open_checkpointer(run_dir) as saver:
        app = build_graph(deps).compile(checkpointer=saver)
        app.invoke(initial_state(rounds), thread_config(), durability="sync")

Each node is wrapped once: the wrapper reports start/end to the progress display and adds the node's
cost (wall seconds, LLM calls and tokens from the call log, simulated steps, episodes, sandbox runs) to
`state["cost"]`. An exception out of a node propagates unchanged (the run stops at the last checkpoint)
with the node and round added as a note to its traceback. `durability="sync"` writes each checkpoint
before the next node starts, so a killed run resumes from the last finished node.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph

from agents.graph import routing
from agents.graph.deps import Deps
from agents.graph.nodes import NODES, Node, Summary
from agents.graph.nodes.work import raised_in
from agents.graph.state import RoundState
from programs.seeds import using_space

THREAD_ID = "main"  # one thread per run directory
RECURSION_LIMIT = 100_000  # node steps per invoke; rounds × nodes × retries stays far below


def thread_config(checkpoint_id: str | None = None) -> dict[str, Any]:
    """The `config` of the run's thread (optionally at one checkpoint)."""
    conf: dict[str, Any] = {"thread_id": THREAD_ID}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf, "recursion_limit": RECURSION_LIMIT}


@contextlib.contextmanager
def open_checkpointer(run_dir: str | Path) -> Iterator[Any]:
    """A `SqliteSaver` on runs/<name>/trace.sqlite."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(run_dir) / "trace.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


def _llm_usage(deps: Deps) -> tuple[int, int, int]:
    """(calls, tokens in, tokens out) in the call log so far."""
    if deps.call_log is None:
        return 0, 0, 0
    rows = deps.call_log.read()
    tokens_in = sum(r.get("tokens_in") or 0 for r in rows)
    return len(rows), tokens_in, sum(r.get("tokens_out") or 0 for r in rows)


def _add(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {k: round(a.get(k, 0) + b.get(k, 0), 3) for k in {*a, *b}}


def instrument(name: str, node: Node, summary: Summary, deps: Deps) -> Any:
    """`node(state, deps)` as a one-argument LangGraph node that reports progress and records cost."""

    @functools.wraps(node)
    def run(state: RoundState) -> dict[str, Any]:
        rnd = state.get("round", 0) + (1 if name == "allocate" else 0)
        deps.reporter.node_start(rnd, name)
        meter0, llm0, t0 = deps.meter.snapshot(), _llm_usage(deps), deps.clock()
        with raised_in(f"node {name!r} of round {rnd}"), using_space(deps.config.space):
            update = dict(node(state, deps))
        llm1, meter1 = _llm_usage(deps), deps.meter.snapshot()
        cost = {"wall_s": round(deps.clock() - t0, 3), "llm_calls": llm1[0] - llm0[0],
                "tokens_in": llm1[1] - llm0[1], "tokens_out": llm1[2] - llm0[2],
                **{k: meter1[k] - meter0[k] for k in meter1}}
        prev = dict(update["cost"] if "cost" in update else state.get("cost", {}))
        prev[name] = _add(prev.get(name, {}), cost)  # a node that runs again in a round (retries) adds up
        update["cost"] = prev
        update["node"] = name
        deps.reporter.node_end(rnd, name, summary(update), cost)
        return update

    return run


def build_graph(deps: Deps) -> StateGraph:
    """The loop's graph for the method in `deps.config` (every method uses the same nodes and edges;
    methods without a critic route past diagnose … compile)."""
    g = StateGraph(RoundState)
    for name, (node, summary) in NODES.items():
        g.add_node(name, instrument(name, node, summary, deps))
    g.add_edge(START, "bootstrap")
    g.add_edge("bootstrap", "report")
    g.add_conditional_edges("report", routing.after_report, {"allocate": "allocate", routing.END: END})
    g.add_edge("allocate", "generate")
    g.add_edge("generate", "validate")
    g.add_conditional_edges("validate", routing.after_validate, ["generate", "rollout"])
    diagnose = deps.config.method_config.diagnose
    g.add_conditional_edges("rollout", functools.partial(routing.after_rollout, diagnose=diagnose),
                            ["diagnose", "train"])
    chain = ("diagnose", "verify", "remember", "compile", "train", "measure", "report")
    for a, b in zip(chain, chain[1:], strict=False):
        g.add_edge(a, b)
    return g


_STUDIO: dict[tuple[str, str], StateGraph] = {}


def studio_graph(config: Mapping[str, Any] | None = None) -> StateGraph:
    """The graph `langgraph.json` names (for `langgraph dev` / LangGraph Studio), with live dependencies;
    the server compiles it with its own checkpointer. The preset and run directory come from the server's
    configuration (`configurable.preset`, `configurable.run_dir`) or $CODA_STUDIO_PRESET /
    $CODA_STUDIO_RUN_DIR (default: smoke, runs/studio). The server calls this factory per run: the
    dependencies (worker pools, memory) are opened once per (preset, run directory) and process, and stay
    open for its life."""
    import atexit
    import os

    from agents.config import get_preset
    from agents.graph.deps import open_deps

    conf = dict((config or {}).get("configurable", {}) or {})
    preset = str(conf.get("preset") or os.environ.get("CODA_STUDIO_PRESET", "smoke"))
    run_dir = str(conf.get("run_dir") or os.environ.get("CODA_STUDIO_RUN_DIR", str(Path("runs") / "studio")))
    key = (preset, run_dir)
    if key not in _STUDIO:
        stack = contextlib.ExitStack()
        deps = stack.enter_context(open_deps(get_preset(preset), Path(run_dir)))
        atexit.register(stack.close)
        _STUDIO[key] = build_graph(deps)
    return _STUDIO[key]
