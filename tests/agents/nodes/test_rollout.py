"""`rollout`: the current policy on every accepted training and measurement scene, one saved episode each
(reused when the node runs again)."""

from __future__ import annotations

import json

from agents.graph.nodes.rollout import rollout, scene_id
from tests.agents.graphkit import call


def test_every_accepted_scene_is_rolled_out_once(before) -> None:
    deps, state = before("rollout")
    update = call(rollout, state, deps)
    assert set(update) == {"rollouts", "rollout_failures"} and update["rollout_failures"] == 0
    scenes = [s for slot in state["slots"] for s in slot["accepted"] + slot["held_scenes"]]
    assert sorted(scene_id(p) for p in update["rollouts"]) == sorted(scene_id(s) for s in scenes)
    for p in update["rollouts"]:
        assert p.startswith("episodes/round_01/roll_")
        assert json.loads((deps.run.root / p).with_suffix(".json").read_text())["success"] is False
    steps = deps.meter.sim_steps
    assert call(rollout, state, deps) == update and deps.meter.sim_steps == steps  # re-run: reused
