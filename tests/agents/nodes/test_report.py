"""`report`: the round's row in metrics.jsonl (what was generated, the critic's verdicts, per-node cost),
report.html, and a memory snapshot a fork from this round boundary restores."""

from __future__ import annotations

from agents.graph.nodes.report import report
from agents.graph.rundir import read_metrics
from tests.agents.graphkit import call


def test_the_round_is_written_to_metrics_and_memory_is_snapshotted(before) -> None:
    deps, state = before("report")
    state = {**state, "cost": {"rollout": {"sim_steps": 7.0}}}
    update = call(report, state, deps)
    assert set(update) == {"metrics"}
    row = update["metrics"]
    assert read_metrics(deps.run.metrics)[-1] == row and row["round"] == 1
    assert row["generation"]["accepted"] == {"pick_place": deps.config.budget}
    assert row["critic"]["verdicts"]["validated"] == 1
    assert row["critic"]["validated_modes"] == ["obj_yaw_approach_high|pick_place"]
    assert row["cost_total"]["sim_steps"] == 7.0
    assert (deps.run.root / "report.html").exists()
    assert (deps.run.root / "snapshots/round_01/memory").is_dir()
