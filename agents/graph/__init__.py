"""The round as a LangGraph state machine (DESIGN §5): `state.py` (the state schema: ids and relative
paths only), `build.py` (the uncompiled graph factory, the node meter, the SQLite checkpointer),
`routing.py` (pure routing functions), `deps.py` (everything a node uses, injected), `nodes/` (one plain
function per node), `trainer.py` (the real policy trainer), `rundir.py` (the run directory's layout) and
`display.py` (console tables and report.html).

Names load lazily: `import agents.graph.rundir` does not pull in LangGraph.
"""

from __future__ import annotations

from common.lazy import lazy_exports

_LAZY = {
    **dict.fromkeys(("build_graph", "studio_graph", "open_checkpointer", "thread_config"),
                    "agents.graph.build"),
    **dict.fromkeys(("Deps", "open_deps", "Trainer", "Agents", "Reporter", "QuietReporter", "Meter"),
                    "agents.graph.deps"),
    **dict.fromkeys(("RoundState", "Slot", "initial_state", "new_slot", "slot_key"), "agents.graph.state"),
    "RunDir": "agents.graph.rundir",
    "PolicyTrainer": "agents.graph.trainer",
    "NODES": "agents.graph.nodes",
}

__all__, __getattr__ = lazy_exports(__name__, _LAZY)
