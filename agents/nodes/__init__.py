"""The round's nodes (DESIGN §5), each a plain function `node(state, deps) -> partial update`, and a
one-line summary of each node's update for the progress display."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agents.nodes import allocate as _allocate
from agents.nodes import critic as _critic
from agents.nodes import generate as _generate
from agents.nodes import learn as _learn
from agents.nodes import memory as _memory
from agents.nodes import report as _report
from agents.nodes import rollout as _rollout

Node = Callable[[Any, Any], dict[str, Any]]
Summary = Callable[[Mapping[str, Any]], str]

# name → (node, summary), in the order a round runs them
NODES: dict[str, tuple[Node, Summary]] = {
    "bootstrap": (_learn.bootstrap, _learn.summary_measure),
    "allocate": (_allocate.allocate, _allocate.summary),
    "generate": (_generate.generate, _generate.summary),
    "validate": (_generate.validate, _generate.summary),
    "rollout": (_rollout.rollout, _rollout.summary),
    "diagnose": (_critic.diagnose, _critic.summary_diagnose),
    "verify": (_critic.verify, _critic.summary_verify),
    "remember": (_memory.remember, _memory.summary_remember),
    "compile": (_memory.compile, _memory.summary_compile),
    "train": (_learn.train, _learn.summary_train),
    "measure": (_learn.measure, _learn.summary_measure),
    "report": (_report.report, _report.summary),
}

__all__ = ["NODES", "Node", "Summary"]
