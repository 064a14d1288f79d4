"""The critic-ranking measurement's arithmetic and its reading of the loop's recorded updates."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studies.critic_rank import auc, recorded, table


def test_auc_is_the_probability_a_success_chunk_ranks_above_a_failure_chunk() -> None:
    assert auc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert auc(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 0.0
    assert auc(np.array([1.0, 3.0]), np.array([2.0])) == 0.5
    assert auc(np.array([2.0]), np.array([2.0])) == 0.5  # a tie counts half
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=40), rng.normal(size=30)
    assert auc(a, b) == pytest.approx(np.mean(a[:, None] > b[None, :]))
    assert np.isnan(auc(np.array([]), b))


def test_recorded_rows_come_from_weighted_updates_only(tmp_path) -> None:
    run = tmp_path / "cell"
    (run / "train").mkdir(parents=True)
    groups = {"adv_demo": 0.0, "adv_rollout_success": -0.3, "adv_rollout_failure": 0.2}
    (run / "train" / "round_01.json").write_text(json.dumps({"update": "aw", "shaping": "text2potential",
                                                             **groups}))
    (run / "train" / "round_02.json").write_text(json.dumps({"update": "aw", "shaping": "sparse",
                                                             **groups, "adv_rollout_failure": -0.5}))
    (run / "train" / "round_00.json").write_text(json.dumps({"update": "sft"}))
    rows = recorded([run])
    assert [(r["round"], r["variant"]) for r in rows] == [(1, "program"), (2, "sparse")]
    text = table(rows)
    assert "| program | 1 |" in text and "0/1 |" in text and "| sparse | 1 |" in text and "1/1 |" in text
