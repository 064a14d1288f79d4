"""`train`: the round's policy update is the one the method asks for (none, SFT on the round's demos and
the replayed ones, or advantage-weighted with the method's shaping), recorded once."""

from __future__ import annotations

import pytest

from agents.config import METHODS
from agents.graph.nodes.learn import train
from tests.agents.graphkit import call


@pytest.mark.parametrize("method", METHODS.names())
def test_the_trainer_gets_the_update_the_method_asks_for(before, method: str) -> None:
    deps, state = before("train", method)
    update = call(train, state, deps)
    assert set(update) == {"policy", "train_metrics", "demo_history"}
    m = METHODS.get(method)
    expected = {"none": [], "sft": ["finetune"], "aw": [f"aw_update:{m.shaping}"]}[m.update]
    assert [kind for kind, _ in deps.trainer.calls] == expected
    assert update["train_metrics"]["update"] == m.update
    assert update["policy"] == "policy/round_01.safetensors" and (deps.run.root / update["policy"]).exists()
    round_demos = [d for s in state["slots"] for d in s["demos"]]
    assert update["demo_history"]["pick_place"] == state["demo_history"]["pick_place"] + round_demos
    if m.update == "sft":  # the round's demos and (replay) every earlier one
        assert deps.trainer.calls[0][1] == len(update["demo_history"]["pick_place"])
    assert call(train, state, deps) == update and len(deps.trainer.calls) == len(expected)  # kept


@pytest.mark.parametrize("method", ["coda", "sft", "zero_shot"])
def test_retrain_replaces_the_update_with_the_bootstrap_recipe_on_every_demo(before, method: str) -> None:
    import dataclasses

    from agents.config import get_preset
    from tests.fakes.trainer import FakeTrainer

    learn = dataclasses.replace(get_preset("smoke").learn, retrain=True)
    deps, state = before("train", method, learn=learn, trainer=FakeTrainer(limit=0.5, step=0.1))
    update = call(train, state, deps)
    if METHODS.get(method).update == "none":  # nothing retrained: the policy stays as it was
        assert deps.trainer.calls == [] and "retrain" not in update["train_metrics"]
        return
    every = update["demo_history"]["pick_place"]
    assert len(every) > len(state["demo_history"]["pick_place"])  # the round's own among them
    assert deps.trainer.calls == [("bootstrap", len(every))]
    # the round's policy is the retrained one (the fake's bootstrap limit 0.5), not an update of round 0's
    assert FakeTrainer.read(deps.run.root / update["policy"]) == pytest.approx(0.5)
    assert update["train_metrics"] == {"update": METHODS.get(method).update, "retrain": True,
                                       "yaw_limit": 0.5}
    assert call(train, state, deps) == update and len(deps.trainer.calls) == 1  # kept on a re-run


def test_scaled_retraining_sees_each_demo_as_often_as_the_bootstrap(before) -> None:
    import dataclasses

    from agents.config import get_preset
    from agents.graph.rundir import read_json
    from agents.graph.trainer import retrain_steps
    from tests.fakes.trainer import FakeTrainer

    smoke = get_preset("smoke").learn
    learn = dataclasses.replace(smoke, retrain=True, retrain_steps="scaled")
    deps, state = before("train", "coda", learn=learn, trainer=FakeTrainer(limit=0.5, step=0.1))
    boot = read_json(deps.run.dir("train") / "round_00.json")["demos"]
    update = call(train, state, deps)
    every = len(update["demo_history"]["pick_place"])
    assert every > boot  # the round added demonstrations, so the scaled count is above the bootstrap's
    steps = round(smoke.sft_steps * every / boot)
    assert steps > smoke.sft_steps and deps.trainer.calls == [("bootstrap", every, steps)]
    assert retrain_steps(1500, 940, 300) == 4700 and retrain_steps(1500, 200, 300) == 1500
    with pytest.raises(ValueError, match="0 demonstrations"):
        retrain_steps(1500, 940, 0)
