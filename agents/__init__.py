"""CoDA `agents`: the co-evolution loop as a LangGraph state machine, its critic and writers, and the LLM
backends they call (see docs/architecture.md).

    agents/config.py   RunConfig (every knob of a run), MethodConfig (CoDA and each baseline), presets
    agents/graph/      the round: state, graph factory, routing, injected dependencies, nodes, trainer
    agents/critic/     failure summary, rules and LLM critic, targeted-vs-control verification
    agents/writers/    generation-program and training-program writers
    agents/llm/        LLM backends (local llama.cpp, OpenAI-compatible, rules, record/replay)
    agents/run.py      `python -m agents.run`;  agents/replay.py  `python -m agents.replay`

Names load lazily, so `import agents` pulls in neither LangGraph nor torch.
"""

from __future__ import annotations

from common.lazy import lazy_exports

_LAZY = {
    **dict.fromkeys(("RunConfig", "MethodConfig", "LearnConfig", "METHODS", "PRESETS", "get_preset"),
                    "agents.config"),
    **dict.fromkeys(("build_graph", "open_checkpointer", "thread_config"), "agents.graph.build"),
    **dict.fromkeys(("Deps", "open_deps", "Trainer", "Agents", "Reporter"), "agents.graph.deps"),
    **dict.fromkeys(("RoundState", "Slot", "initial_state"), "agents.graph.state"),
    "RunDir": "agents.graph.rundir",
    **dict.fromkeys(("diagnose", "CriticConfig", "summarize_failure", "FailureSummary"), "agents.critic"),
    **dict.fromkeys(("verify", "VerifyConfig"), "agents.critic.verify"),
    **dict.fromkeys(("write_generation_program", "write_training_program", "WriterConfig", "WriterError"),
                    "agents.writers"),
    **dict.fromkeys(("LLM", "LLMOutputError", "make_llm"), "agents.llm"),
}

__all__, __getattr__ = lazy_exports(__name__, _LAZY)
