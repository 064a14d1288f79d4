"""`bootstrap`: seed programs, seed demonstrations, the starting policy (SFT or the untrained one, as the
method asks) and its held-out success."""

from __future__ import annotations

import shutil

import pytest

from agents.config import METHODS
from agents.graph.nodes.learn import bootstrap
from tests.agents.graphkit import call


@pytest.mark.parametrize("method", METHODS.names())
def test_bootstrap_makes_the_starting_policy_the_method_asks_for(before, method: str) -> None:
    deps, state = before("bootstrap", method)
    for kind in ("policy", "train"):  # the recorded run's policy would be kept as a finished update
        shutil.rmtree(deps.run.root / kind, ignore_errors=True)
    update = call(bootstrap, state, deps)
    assert set(update) == {"round", "policy", "programs", "train_metrics", "demo_history", "measured"}
    m = METHODS.get(method)
    assert [kind for kind, _ in deps.trainer.calls] == ["bootstrap" if m.bootstrap_sft else "initial"]
    assert update["train_metrics"]["update"] == ("sft" if m.bootstrap_sft else "none")
    assert update["round"] == 0 and (deps.run.root / update["policy"]).exists()
    demos = update["demo_history"]["pick_place"]
    assert len(demos) == deps.config.seed_demos and update["measured"]["demos"] == len(demos)
    assert all((deps.run.root / d).exists() for d in demos)
    assert set(update["measured"]["eval"]["pick_place"]) == {"id", "ood"}
    assert len(update["programs"]) == 2  # the family's seed generation and training programs
