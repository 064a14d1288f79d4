"""What a cell trained on (`studies.scene_coverage`): out-of-distribution factors, conditions, depth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.factors import FactorDef
from studies.scene_coverage import depth, main, ood_side


def test_a_value_is_placed_by_its_side_and_depth_in_the_ood_shell() -> None:
    f = FactorDef(name="x", group="spatial", type="float", default=0.0, range=(-1.0, 1.0),
                  ood_range=(-3.0, 2.0))
    assert ood_side(f, 0.5) is None and depth(f, 0.5) is None
    assert ood_side(f, -2.0) == "low" and depth(f, -2.0) == pytest.approx(0.5)
    assert ood_side(f, 2.0) == "high" and depth(f, 2.0) == pytest.approx(1.0)
    c = FactorDef(name="c", group="attribute", type="choice", default="red", choices=("red", "blue"),
                  ood_choices=("green",))
    assert ood_side(c, "blue") is None and ood_side(c, "green") == "green" and depth(c, "green") is None
    flat = FactorDef(name="m", group="attribute", type="float", default=1.0, range=(0.5, 1.5))
    assert ood_side(flat, 3.0) is None  # no OOD part: never out of distribution


def test_smoke_cells_training_scenes_are_read_from_their_final_state(smoke_table, tmp_path: Path,
                                                                    capsys) -> None:
    out, results, _ = smoke_table
    dest = tmp_path / "coverage.json"
    assert main(["--runs", str(out), "--records", str(results / "table1_smoke"), "--out", str(dest)]) == 0
    got = json.loads(dest.read_text())
    cells = {c["method"]: c for c in got["cells"]}
    assert "zero_shot" not in cells and {"sft", "coda"} <= set(cells)
    # one round of the smoke preset: `budget` accepted scenes of its one family; SFT's in distribution
    assert all(c["scenes"] == 2 for c in cells.values())
    assert cells["sft"]["ood_factors"] == 0 and cells["sft"]["conditions"] == 0
    assert all(0.0 <= c["depth"] <= 1.0 and 0.0 <= c["all_out"] <= 1.0 for c in cells.values())
    assert "Spearman" in capsys.readouterr().out


def test_a_folder_without_cells_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["--runs", str(tmp_path / "nope")]) == 2
    assert "no folder" in capsys.readouterr().err
    assert main(["--runs", str(tmp_path)]) == 2
    assert "recorded cell" in capsys.readouterr().err
