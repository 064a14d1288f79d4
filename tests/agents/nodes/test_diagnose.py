"""`diagnose`: the critic explains failed training rollouts, one file per episode — and runs only for the
methods that diagnose (the graph routes the others from rollout straight to train)."""

from __future__ import annotations

import pytest

from agents.config import METHODS
from agents.graph.build import build_graph
from agents.graph.deps import Deps
from agents.graph.nodes.diagnose import diagnose
from agents.graph.nodes.rollout import scene_id
from agents.graph.rundir import RunDir, read_json
from tests.agents.graphkit import call, config
from tests.fakes.trainer import FakeTrainer


@pytest.mark.parametrize("method", METHODS.names())
def test_only_methods_that_diagnose_route_through_the_critic(method: str) -> None:
    deps = Deps(config=config(method), run=RunDir("unused"), sandbox=None, episodes=None,
                trainer=FakeTrainer())
    (branch,) = build_graph(deps).branches["rollout"].values()
    route = branch.path.invoke({"round": 1})
    assert route == ("diagnose" if METHODS.get(method).diagnose else "train")


def test_failed_training_rollouts_are_diagnosed_and_filed(before) -> None:
    deps, state = before("diagnose")
    update = call(diagnose, state, deps)
    assert set(update) == {"diagnoses", "critic_failures", "unusable_answers"}
    assert len(update["diagnoses"]) == deps.config.diagnose_max  # every training rollout failed
    assert update["critic_failures"] == []
    assert update["unusable_answers"] == {**state["unusable_answers"], "critic": 0}
    rec = read_json(deps.run.root / update["diagnoses"][0])
    assert rec["verdict"] is None and rec["family"] == "pick_place" and rec["retries"] == 0
    assert rec["diagnosis"]["factor"] == "obj_yaw" and rec["episode"] in state["rollouts"]
    training = {scene_id(s) for slot in state["slots"] for s in slot["accepted"]}
    assert scene_id(rec["episode"]) in training  # a training scene, not a measurement one
    assert [kind for kind, _ in deps.agents.calls] == ["diagnose"]
    calls = len(deps.agents.calls)
    assert call(diagnose, state, deps) == update and len(deps.agents.calls) == calls  # re-run: on file


def test_diagnoses_are_taken_in_turn_from_every_family() -> None:
    """With `diagnose_max` below the failures, each family gets a diagnosis before any gets a second (the
    slots of the families listed first used to take them all)."""
    from types import SimpleNamespace

    from agents.graph.nodes.diagnose import _failed_train_episodes
    from agents.graph.nodes.rollout import scene_id

    slots = [{"family": fam, "mode_id": m,
              "accepted": [f"scenes/{fam}_{m}_{fam}{m}{i}.json" for i in range(3)]}
             for fam in ("a", "b", "c") for m in ("seed", "var")]
    by_scene = {scene_id(p): SimpleNamespace(path=p, success=False)
                for s in slots for p in s["accepted"]}
    deps = SimpleNamespace(config=SimpleNamespace(diagnose_max=4))
    got = _failed_train_episodes(deps, {"slots": slots}, by_scene)
    assert [(s["family"], s["mode_id"]) for s, _ in got] == [("a", "seed"), ("b", "seed"), ("c", "seed"),
                                                              ("a", "var")]


def test_the_random_critic_method_diagnoses_with_a_random_factor(before) -> None:
    from agents.graph.deps import HelperAgents

    deps, state = before("diagnose", "coda_random_critic", agents=HelperAgents())
    update = call(diagnose, state, deps)
    recs = [read_json(deps.run.root / rel) for rel in update["diagnoses"]]
    assert recs and all(r["diagnosis"]["critic_id"] == "random" for r in recs)
