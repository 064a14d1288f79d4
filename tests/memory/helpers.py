"""Builders for the memory tests: records that differ only where a test needs them to."""

from __future__ import annotations

from typing import Any

from memory.types import Diagnosis, EpisodeRecord, Verdict

YAW_A = "The cube is rotated far from its canonical yaw so the fingers close on a corner and it slips."
YAW_B = "Large object yaw misaligns the approach; the fingers hit the edge of the block and the grasp fails."
FAR = "The object sits too far from the robot, so the arm stalls at the edge of its workspace."


def diag(episode_id: str = "e1", explanation: str = YAW_A, **kw: Any) -> Diagnosis:
    base: dict[str, Any] = dict(factor_group="spatial", factor="obj_yaw", phase="grasp", side="high",
                                edit={"obj_yaw": (1.0, 1.5)})
    return Diagnosis(episode_id=episode_id, explanation=explanation, **{**base, **kw})


def record(episode_id: str = "e1", family: str = "pick_place", **kw: Any) -> EpisodeRecord:
    base: dict[str, Any] = dict(scene_id=f"s_{episode_id}", success=False, failing_phase="grasp", round=1)
    return EpisodeRecord(episode_id=episode_id, family=family, **{**base, **kw})


def validated(d: Diagnosis) -> Verdict:
    return Verdict(diagnosis_id=d.id, status="validated", targeted_failure_rate=0.8, control_failure_rate=0.2,
                   statistic=3.2, p_value=0.003, n=20)
