"""An evaluation's per-task records, so a long one resumes: beside the evaluation's file `X.json`, the folder
`X.tasks/` holds one file per finished task (`<index>_<task>.json`: the evaluation's settings, the commit
that ran it, the task's result), written as each task finishes. A killed evaluation started again with the
same settings keeps them and runs the remaining tasks; one started with other settings (policy file, its
hash, episodes per task, seed, first state) is refused rather than mixed in. `X.json` is written once every
task has a record: the table reads only finished evaluations.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

# what must match for a task's record to count toward a resumed evaluation
SETTINGS = ("suite", "policy", "policy_sha256", "episodes_per_task", "seed", "first_state")


def tasks_folder(out: Path) -> Path:
    """Where the per-task records of the evaluation file `out` go."""
    return out.with_suffix(".tasks")


def settings(suite: str, policy: str, episodes: int, seed: int, first_state: int) -> dict[str, Any]:
    """The settings an evaluation's records must share: `suite` is the evaluated (perturbed) suite's name;
    a policy file is pinned by its hash, so a retrained checkpoint at the same path is not mixed in."""
    from coda_policy.pretrained import sha256

    digest = None if policy == "expert" else sha256(Path(policy))
    return {"suite": suite, "policy": policy, "policy_sha256": digest, "episodes_per_task": episodes,
            "seed": seed, "first_state": first_state}


def task_path(folder: Path, index: int, name: str) -> Path:
    return folder / f"{index:02d}_{name}.json"


def write_task(path: Path, config: dict[str, Any], commit: str, result: Any) -> Path:
    """A finished task's record (`result`: an `evaluate.TaskResult`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**config, "evaluated_at": commit, "task": asdict(result)}, indent=1) + "\n")
    return path


def read_task(path: Path, config: dict[str, Any]) -> dict[str, Any]:
    """A finished task's result as written, after checking it was run with `config`'s settings."""
    rec = json.loads(path.read_text())
    differ = {k: (rec.get(k), config[k]) for k in SETTINGS if rec.get(k) != config[k]}
    if differ:
        raise ValueError(f"{path}: recorded with other settings than this evaluation's "
                         f"(recorded, now: {differ}); remove the folder or give another --out")
    return rec["task"]


def evaluation_record(config: dict[str, Any], summary: dict[str, Any], tasks_run: list[Any], wall_s: float,
                      **extra: Any) -> dict[str, Any]:
    """The evaluation's file: its settings, the summary over tasks and every task's result."""
    return {**config, **extra, **summary, "wall_s": round(wall_s, 1),
            "tasks_run": [asdict(r) for r in tasks_run]}
