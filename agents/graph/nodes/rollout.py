"""`rollout`: the current policy on every accepted scene of the round (training and measurement scenes).
Episodes land in episodes/round_XX/roll_<scene id>_<policy digest>.npz (+ .json); they are the episodic
evidence the critic reads, the data of the advantage-weighted update, and the "before" of `measure`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.graph.deps import Deps
from agents.graph.nodes.work import run_policy, stable_seed
from agents.graph.state import RoundState

EPISODE_PREFIXES = ("roll", "meas", "demo", "eval")  # episodes/round_XX/<prefix>_<scene id>[_<policy>]


def scene_id(path: str) -> str:
    """The scene id in a scene file name (`<family>_<arm>_<scene id>`) or an episode file name."""
    parts = Path(path).stem.split("_")
    return parts[1] if parts[0] in EPISODE_PREFIXES else parts[-1]


@dataclass(frozen=True)
class Outcome:
    """How one saved episode went (read from its .json meta)."""

    path: str
    success: bool
    failing_phase: str | None
    family: str


def outcomes(deps: Deps, paths: Sequence[str]) -> dict[str, Outcome]:
    """Scene id → outcome of each saved episode."""
    out = {}
    for p in paths:
        meta = json.loads(deps.run.abs(p).with_suffix(".json").read_text())
        out[scene_id(p)] = Outcome(p, bool(meta["success"]), meta.get("failing_phase"), meta["family"])
    return out


def rollout(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Roll the current policy out on the round's accepted scenes."""
    r = state["round"]
    scenes = [s for slot in state["slots"] for s in slot["accepted"] + slot["held_scenes"]]
    tick = deps.reporter.progress("rollout: episodes", len(scenes))
    ran = run_policy(deps, scenes, state["policy"], round_no=r, prefix="roll",
                     seed=stable_seed(deps.config.seed, r, "rollout"), tick=tick)
    errors = [x for x in ran if x.error]
    for x in errors[:3]:
        deps.reporter.log(f"rollout of {x.scene} failed to run: {x.error}")
    return {"rollouts": [x.path for x in ran if x.path], "rollout_failures": len(errors)}


def summary(update: Mapping[str, Any]) -> str:
    n = len(update.get("rollouts", []))
    errors = update.get("rollout_failures", 0)
    return f"{n} episodes" + (f", {errors} errored" if errors else "")
