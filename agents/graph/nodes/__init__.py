"""The round's nodes (DESIGN §5), each a plain function `node(state, deps) -> partial update`, and a
one-line summary of each node's update for the progress display."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agents.graph.nodes import allocate as _allocate
from agents.graph.nodes import diagnose as _diagnose
from agents.graph.nodes import generate as _generate
from agents.graph.nodes import learn as _learn
from agents.graph.nodes import remember as _remember
from agents.graph.nodes import report as _report
from agents.graph.nodes import rollout as _rollout

Node = Callable[[Any, Any], dict[str, Any]]
Summary = Callable[[Mapping[str, Any]], str]

# name → (node, summary), in the order a round runs them
NODES: dict[str, tuple[Node, Summary]] = {
    "bootstrap": (_learn.bootstrap, _learn.summary_measure),
    "allocate": (_allocate.allocate, _allocate.summary),
    "generate": (_generate.generate, _generate.summary),
    "validate": (_generate.validate, _generate.summary),
    "rollout": (_rollout.rollout, _rollout.summary),
    "diagnose": (_diagnose.diagnose, _diagnose.summary_diagnose),
    "verify": (_diagnose.verify, _diagnose.summary_verify),
    "remember": (_remember.remember, _remember.summary_remember),
    "compile": (_remember.compile_programs, _remember.summary_compile),
    "train": (_learn.train, _learn.summary_train),
    "measure": (_learn.measure, _learn.summary_measure),
    "report": (_report.report, _report.summary),
}

__all__ = ["NODES", "Node", "Summary"]
