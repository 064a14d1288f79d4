"""`measure`: success before/after per arm on its measurement scenes, recorded in the learning-progress
ledger, and held-out success."""

from __future__ import annotations

from agents.graph.nodes.learn import measure
from tests.agents.graphkit import call


def test_each_arm_is_measured_and_recorded_in_the_ledger(before) -> None:
    deps, state = before("measure")
    update = call(measure, state, deps)
    assert set(update) == {"measured"} and set(update["measured"]) == {"arms", "eval"}
    rows = update["measured"]["arms"]
    arms = sorted((s["mode_id"], s["held"]) for s in state["slots"])
    assert sorted((r["mode"], r["n"]) for r in rows) == arms
    for r in rows:
        assert r["family"] == "pick_place" and r["before"] == 0.0  # the rollouts all failed
        hist = deps.ledger.history(r["mode"], "pick_place")
        assert hist and hist[-1].success == r["after"]
    assert set(update["measured"]["eval"]["pick_place"]) == {"id", "ood"}
