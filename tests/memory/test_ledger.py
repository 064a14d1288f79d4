"""Learning-progress ledger: ALP smoothing, persistence, and allocation (exact budgets, favouring progress,
exploring unseen modes)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from memory.ledger import AllocationConfig, Ledger, allocate, allocate_family, arm_scores, smoothed_alp
from memory.types import ProgressPoint


def _pts(*succ: float, before: dict[int, float] | None = None) -> list[ProgressPoint]:
    before = before or {}
    return [ProgressPoint(mode_id="m", family="f", round=i, success=s, before=before.get(i))
            for i, s in enumerate(succ)]


def test_alp_is_smoothed_absolute_change() -> None:
    assert smoothed_alp(_pts(0.2, 0.5, 0.4), alpha=0.5) == pytest.approx([None, 0.3, 0.2])
    assert smoothed_alp(_pts(0.8, 0.2), alpha=0.3) == pytest.approx([None, 0.6])  # |Δ|: a drop counts too
    assert smoothed_alp(_pts(0.5, 0.5, 0.5, 0.5), alpha=0.3)[-1] == 0.0


def test_alp_uses_same_round_before_measurement() -> None:
    # round 0 measured before (0.1) and after (0.4) training: progress exists after one round
    assert smoothed_alp(_pts(0.4, 0.45, before={0: 0.1}), alpha=0.5) == pytest.approx([0.3, 0.175])


def test_record_upserts_by_round_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    led = Ledger(path)
    led.record("m", "pick_place", 1, 0.2, n=10)
    led.record("m", "pick_place", 2, 0.9, n=10)
    led.record("m", "pick_place", 2, 0.6, n=10)  # a resumed round re-measures: replaces, not appends
    again = Ledger(path)
    assert [p.success for p in again.history("m", "pick_place")] == [0.2, 0.6]
    assert again.alp("m", "pick_place", alpha=0.3) == pytest.approx(0.4)
    assert again.alp("other", "pick_place") is None
    assert json.loads(path.read_text())["version"] == 1 and not path.with_suffix(".json.tmp").exists()


def _ledger(arms: dict[str, list[float]], family: str = "pick_place") -> Ledger:
    led = Ledger()
    for mode, succ in arms.items():
        for r, s in enumerate(succ):
            led.record(mode, family, r, s)
    return led


def test_allocation_sums_exactly_to_each_family_budget() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        led = Ledger()
        families = {f"fam{i}": [f"m{j}" for j in range(int(rng.integers(1, 7)))] for i in range(3)}
        for fam, modes in families.items():
            for m in modes:
                for r in range(int(rng.integers(0, 4))):
                    led.record(m, fam, r, float(rng.uniform()))
        budget = {f: int(rng.integers(0, 40)) for f in families}
        cfg = AllocationConfig(epsilon=float(rng.uniform()), ucb_c=float(rng.uniform(0, 1)),
                               min_per_arm=int(rng.integers(0, 4)), alpha=float(rng.uniform(0.05, 1)))
        out = allocate(led, families, budget, cfg)
        for fam, modes in families.items():
            got = {m: out[(m, fam)] for m in modes}
            assert sum(got.values()) == budget[fam] and min(got.values()) >= 0
            if budget[fam] >= cfg.min_per_arm * len(modes):
                assert min(got.values()) >= cfg.min_per_arm


def test_allocation_favours_learning_progress() -> None:
    led = _ledger({"seed": [0.8, 0.8, 0.82], "fast": [0.1, 0.4, 0.7], "slow": [0.3, 0.32, 0.33]})
    out = allocate_family(led, "pick_place", ["seed", "fast", "slow"], 30, AllocationConfig(epsilon=0.1))
    assert out["fast"] > out["slow"] >= out["seed"] >= 1 and sum(out.values()) == 30


def test_unseen_modes_are_explored() -> None:
    led = _ledger({"seed": [0.5, 0.6, 0.65], "old": [0.2, 0.5, 0.7]})
    cfg = AllocationConfig(epsilon=0.0, min_per_arm=0)
    out = allocate_family(led, "pick_place", ["seed", "old", "new"], 20, cfg)
    assert out["new"] >= out["old"] > out["seed"]  # optimism: at least as much as the best-progressing mode
    scores = arm_scores(led, "pick_place", ["seed", "old", "new"], cfg)
    assert scores["new"] == max(scores.values())


def test_epsilon_one_is_uniform_and_zero_progress_is_uniform() -> None:
    led = _ledger({"a": [0.1, 0.9], "b": [0.5, 0.5], "c": [0.2, 0.2]})
    assert allocate_family(led, "pick_place", ["a", "b", "c"], 9, AllocationConfig(epsilon=1.0)) == \
        {"a": 3, "b": 3, "c": 3}
    flat = _ledger({"a": [0.5, 0.5], "b": [0.4, 0.4]})
    cfg = AllocationConfig(epsilon=0.0)
    assert allocate_family(flat, "pick_place", ["a", "b"], 10, cfg) == {"a": 5, "b": 5}


def test_ucb_bonus_prefers_less_measured_arms() -> None:
    led = _ledger({"many": [0.1, 0.2, 0.3, 0.4, 0.5], "few": [0.1, 0.2]})  # same ALP (0.1)
    cfg = AllocationConfig(epsilon=0.0, ucb_c=0.5, min_per_arm=0)
    out = allocate_family(led, "pick_place", ["many", "few"], 20, cfg)
    assert out["few"] > out["many"]


def test_small_budget_and_edge_cases() -> None:
    led = _ledger({"a": [0.1, 0.9], "b": [0.5, 0.5]})
    cfg = AllocationConfig(min_per_arm=5)
    assert allocate_family(led, "pick_place", ["a", "b", "c"], 2, cfg) in ({"a": 1, "b": 0, "c": 1},
                                                                              {"a": 1, "b": 1, "c": 0},
                                                                              {"a": 0, "b": 1, "c": 1})
    assert allocate_family(led, "pick_place", ["a"], 0, cfg) == {"a": 0}
    assert allocate(led, {"x": []}, 0) == {}
    with pytest.raises(ValueError, match="no arms"):
        allocate(led, {"x": []}, 3)
    with pytest.raises(ValueError):
        AllocationConfig(alpha=0.0)


def test_allocation_is_deterministic() -> None:
    led = _ledger({"a": [0.1, 0.3], "b": [0.2, 0.4], "c": [0.5]})
    arms = {"pick_place": ["c", "a", "b", "a"]}
    assert allocate(led, arms, 7) == allocate(led, {"pick_place": ["a", "b", "c"]}, 7)


def test_learnability_is_p_times_one_minus_p_of_the_latest_measurement() -> None:
    led = Ledger()
    assert led.learnability("m", "f") is None  # never measured
    led.record("m", "f", 1, 0.9)
    led.record("m", "f", 2, 0.5)
    assert led.learnability("m", "f") == pytest.approx(0.25)
    led.record("solved", "f", 1, 1.0)
    assert led.learnability("solved", "f") == 0.0


@pytest.mark.parametrize("score, expect", [("lp", {"steady": 0.0, "moving": 0.4}),
                                           ("learnability", {"steady": 0.25, "moving": 0.09}),
                                           ("lp+learnability", {"steady": 0.25, "moving": 0.49})])
def test_the_score_ranks_arms_by_progress_learnability_or_both(score: str, expect: dict[str, float]) -> None:
    led = Ledger()
    for r, (s, m) in enumerate([(0.5, 0.5), (0.5, 0.9)]):  # steady stays at 50 %; moving jumps to 90 %
        led.record("steady", "f", r, s)
        led.record("moving", "f", r, m)
    cfg = AllocationConfig(alpha=1.0, score=score)
    assert arm_scores(led, "f", ["steady", "moving"], cfg) == pytest.approx(expect)
    counts = allocate_family(led, "f", ["steady", "moving"], 20, dataclasses.replace(cfg, epsilon=0.0))
    best = max(expect, key=expect.get)
    assert sum(counts.values()) == 20 and counts[best] == max(counts.values())


def test_an_unknown_score_is_refused() -> None:
    with pytest.raises(ValueError, match="score must be one of lp, learnability, lp\\+learnability"):
        AllocationConfig(score="regret")
