"""`studies.quickstart_round_dev` on a copy of the smoke table's CoDA cell (a one-round run like the
quickstart's): the round's update redone at a step size, scored beside the policy it started from on
development scenes, and kept on a rerun."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from studies import quickstart_round_dev


def test_the_round_is_redone_and_scored_beside_its_start(tmp_path: Path, smoke_table) -> None:
    run = tmp_path / "run"
    shutil.copytree(smoke_table[0] / "coda_seed0", run)
    argv = ["--run", str(run), "--lrs", "1e-3", "--rollouts", "all", "--scenes", "2", "--workers", "1",
            "--out", str(tmp_path / "dev")]
    assert quickstart_round_dev.main(argv) == 0
    res = json.loads((tmp_path / "dev" / "results.json").read_text())
    assert set(res) == {"setup", "start", "lr0.001_rollouts_all"}
    assert res["start"]["of"] == 1 and 0 <= res["lr0.001_rollouts_all"]["id"] <= 1
    assert "update_lr" in res["lr0.001_rollouts_all"]["update"]
    (tmp_path / "dev" / "lr0.001_rollouts_all.safetensors").unlink()  # kept scores are not redone
    assert quickstart_round_dev.main(argv) == 0
    assert json.loads((tmp_path / "dev" / "results.json").read_text()) == res
    # the smoke preset's update imitates demonstrations only: a rollout filter is refused, not run
    with pytest.raises(SystemExit) as refused:
        quickstart_round_dev.main([*argv[:4], "--rollouts", "all,success", *argv[6:]])
    assert refused.value.code == 2
    assert "success" not in "".join(json.loads((tmp_path / "dev" / "results.json").read_text()))
