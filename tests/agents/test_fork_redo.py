"""A fork that redoes a round reads its own round: after `agents.replay --fork` with a changed setting and a
resume, the state a diagnostic gets for the redone round (`node_inputs`) is the fork's, not the parent's
round of the same number that the copied trace still holds (the bug behind libero_s38's "round 1 redone",
FINDINGS #42)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.config import RunConfig
from agents.graph.deps import open_deps
from agents.graph.rundir import RunDir
from agents.replay import history, main, node_inputs, open_app
from tests.agents.graphkit import accepted_per_family, config, run_graph
from tests.fakes.agents import ScriptedAgents
from tests.fakes.trainer import FakeTrainer

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests


def _steps(run: Path) -> list[tuple[int, str]]:
    with open_app(RunDir(run)) as app:
        return [(s.metadata["step"], s.values.get("node", "")) for s in history(app)]


def test_a_fork_redoing_a_round_reads_its_own_inputs(tmp_path: Path) -> None:
    parent, copy = tmp_path / "parent", tmp_path / "fork"
    cfg = config("uniform", rounds=1, budget=2)
    with open_deps(cfg, parent, trainer=FakeTrainer(), agents=ScriptedAgents()) as deps:
        run_graph(deps)
    ends = [step for step, node in _steps(parent) if node == "report"]
    assert len(ends) == 2  # the ends of rounds 0 and 1
    assert main([str(parent), "--fork", str(ends[0]), "--out", str(copy), "--set", "budget=3"]) == 0
    fork_cfg = RunConfig.from_json(RunDir(copy).config.read_text())
    with open_deps(fork_cfg, copy, trainer=FakeTrainer(), agents=ScriptedAgents()) as deps:
        assert deps.config.budget == 3
        run_graph(deps, resume=True)

    parent_cfg, parent_state = node_inputs(parent, 1)
    fork_cfg_read, fork_state = node_inputs(copy, 1)
    assert parent_cfg.budget == 2 and accepted_per_family(parent_state["slots"]) == {"pick_place": 2}
    assert fork_cfg_read.budget == 3 and accepted_per_family(fork_state["slots"]) == {"pick_place": 3}
    # the copy's branch: one round 1, steps that do not repeat, the head the end of the fork's round 1
    steps = _steps(copy)
    assert len({s for s, _ in steps}) == len(steps)
    assert [node for _, node in steps].count("train") == 1 and steps[-1][1] == "report"
