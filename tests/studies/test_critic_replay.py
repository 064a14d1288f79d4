"""The pieces of `studies.critic_replay` that decide what it measures: which failures it takes, which
arm a scene came from, and when a variant arm's planted factor counts as the known cause."""

from __future__ import annotations

from pathlib import Path

from studies.critic_replay import _FAMILIES, _arm, pick_failures, planted_cause


def _row(family: str, arm: str, success: bool, **factors: object) -> dict:
    return {"episode": Path(f"{family}_{arm}_{len(factors)}_{success}.npz"), "family": family, "arm": arm,
            "success": success, "phase": None if success else "approach", "factors": dict(factors)}


def test_the_arm_is_read_from_a_scene_file_name_with_underscored_families() -> None:
    _FAMILIES.update({"pick_place", "put_inside"})
    assert _arm(Path("pick_place_var_obj_yaw_low_0123456789ab.json")) == "var_obj_yaw_low"
    assert _arm(Path("put_inside_seed_0123456789ab.json")) == "seed"


def test_failures_are_interleaved_across_arms_like_the_diagnose_node() -> None:
    rows = [_row("pick_place", "seed", False), _row("pick_place", "seed", False),
            _row("pick_place", "var_size_high", False), _row("pick_place", "seed", True)]
    got = pick_failures(rows, 2)
    assert [r["arm"] for r in got] == ["seed", "var_size_high"]


def test_a_planted_factor_is_the_cause_only_for_a_clearly_harder_variant() -> None:
    hard = [_row("pick_place", "var_obj_yaw_low", False, obj_yaw=-1.3)] * 3 + \
        [_row("pick_place", "seed", True, obj_yaw=0.1)] * 4
    assert planted_cause(hard, "pick_place", "var_obj_yaw_low") == "obj_yaw"
    easy = [_row("pick_place", "var_obj_yaw_low", True, obj_yaw=-1.3)] * 3 + \
        [_row("pick_place", "seed", True, obj_yaw=0.1)] * 4
    assert planted_cause(easy, "pick_place", "var_obj_yaw_low") is None
    choice = [_row("put_inside", "var_container_white_bowl", False, container="white_bowl")] * 2 + \
        [_row("put_inside", "seed", True, container="plate")] * 2
    assert planted_cause(choice, "put_inside", "var_container_white_bowl") == "container"
