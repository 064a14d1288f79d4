"""One CoDA run (bootstrap, then round 1) made node by node without the graph, on fakes (`node_deps`), once
per session: the run directory as it was before each node, and the state that node was given. A node test
copies the directory of its node and calls the node on that state, for any method."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agents.graph.nodes import NODES
from agents.graph.state import initial_state
from tests.agents.graphkit import node_deps


@dataclass
class Recorded:
    """The run directory before each node (a copy) and the state each node was given."""

    dirs: dict[str, Path] = field(default_factory=dict)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    base = tmp_path_factory.mktemp("coda_round")
    root, out = base / "run", Recorded()
    state: dict[str, Any] = dict(initial_state(1))
    with node_deps(root, "coda", rounds=1) as deps:
        for name, (node, _) in NODES.items():
            out.dirs[name] = base / f"before_{name}"
            shutil.copytree(root, out.dirs[name])
            out.states[name] = copy.deepcopy(state)
            state = {**state, **node(state, deps), "node": name}
    return out


@pytest.fixture
def before(recorded: Recorded, tmp_path: Path) -> Iterator[Any]:
    """`before(node, method="coda", **deps_kwargs) -> (deps, state)`: a copy of the run directory as it was
    before `node`, opened with `node_deps` for `method`, and the state `node` was given."""
    import contextlib

    stack = contextlib.ExitStack()
    made = [0]

    def make(node: str, method: str = "coda", **kw: Any) -> tuple[Any, dict[str, Any]]:
        made[0] += 1
        root = tmp_path / f"{node}_{method}_{made[0]}"
        shutil.copytree(recorded.dirs[node], root)
        deps = stack.enter_context(node_deps(root, method, rounds=1, **kw))
        return deps, copy.deepcopy(recorded.states[node])

    yield make
    stack.close()
