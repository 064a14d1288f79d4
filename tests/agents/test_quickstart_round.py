"""The README's first run must not wreck the policy it ships with: one round of the `quickstart` preset's
update keeps held-out in-distribution success. Its 5 weighted steps at 1e-3 from a cold AdamW took the
pretrained policy from 20 to 3 of 20 held-out ID scenes (issue #38); `coda_policy.awr.checked_update` now
keeps an update only if it lowered its own loss."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agents.config import get_preset
from agents.graph.deps import open_deps
from agents.graph.rundir import read_metrics
from tests.agents.graphkit import run_graph

EVAL_ID = 8  # held-out in-distribution scenes, scored by the run itself before and after its round


@pytest.mark.integration
def test_one_quickstart_round_keeps_held_out_in_distribution_success(tmp_path: Path) -> None:
    # the preset's round and update as they are; "scalar" (a weighted update on the verifier's reward, as
    # the quickstart's round trains) instead of "coda" leaves out diagnosis and verification, which train
    # nothing and take most of the run's time
    cfg = dataclasses.replace(get_preset("quickstart"), method="scalar", workers=0, eval_id=EVAL_ID,
                              eval_ood=0)
    with open_deps(cfg, tmp_path / "qs") as deps:
        run_graph(deps)
    rows = read_metrics(tmp_path / "qs" / "metrics.jsonl")
    before, after = (r["eval"]["pick_place"]["id"] for r in rows)
    train = rows[1]["train"]
    assert train["update"] == "aw" and train["episodes"] > 0, train  # the round did train
    assert before >= 0.75, rows[0]["eval"]  # the shipped policy solves these scenes
    assert after >= before - 1 / EVAL_ID, (before, after, train)  # at most one scene lost
