"""`bench.agents.refine_case` on the fresh-clone demo's compiled LLM stage: every single repair scored on
fresh expert demonstrations, and the refinement the compile would choose (issue #40's fifth sitting: the
LLM's insert stage was dropped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.agents import refine_case

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "docs/results/demo/fresh_clone_c3d0bed/train_base_yaw_insert_low_850e873e.json"


def test_every_repair_is_scored_and_the_chosen_one_named(tmp_path: Path) -> None:
    out = tmp_path / "case.json"
    assert refine_case.main([str(PROGRAM), "--goal", "inserted", "--demos", "1", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["family"] == "stack_insert" and res["demos"] == 1 and 0 <= res["written"] <= 1
    notes = [r["repair"] for r in res["repairs"]]
    assert "reversed the progress of 'insert_fail'" in notes and "dropped subgoal 'insert_fail'" in notes
    assert res["refinement"] is None or res["refinement"].startswith("refined from 850e873e")


def test_bad_input_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:
        refine_case.main([str(PROGRAM), "--demos", "0"])
    assert e.value.code == 2
