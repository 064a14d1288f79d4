"""The allocation-score study: each score's cell is the core table's CoDA cell with only the score changed;
the lp cells can be the core table's own; the table pairs each score with lp by seed; bad input is refused
before any work. The measurement itself (a three-round loop per cell) is `python -m
studies.allocation_dev`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from studies import allocation_dev as study


def test_a_score_changes_only_the_allocation_score_of_the_core_cell() -> None:
    lp, both = study.score_config("lp", 1), study.score_config("lp+learnability", 1)
    assert lp.method == "coda" and lp.seed == 1 and lp.rounds == 3 and lp.allocation.score == "lp"
    assert both.allocation.score == "lp+learnability"
    assert dataclasses.replace(both, allocation=lp.allocation) == lp


def test_the_lp_cells_can_be_the_core_table_s_own(tmp_path: Path) -> None:
    (tmp_path / "core" / "coda_seed2").mkdir(parents=True)
    assert study.run_dir("lp", 2, tmp_path / "out", tmp_path / "core") == tmp_path / "core" / "coda_seed2"
    assert study.run_dir("lp+learnability", 2, tmp_path / "out", tmp_path / "core") == \
        tmp_path / "out" / "lp_learnability_seed2"
    with pytest.raises(FileNotFoundError, match="no run coda_seed3 there"):
        study.run_dir("lp", 3, tmp_path / "out", tmp_path / "core")


def test_the_table_pairs_each_score_with_lp_by_seed() -> None:
    def cell(score: str, seed: int, ood: float) -> dict:
        return {"score": score, "seed": seed, "id": {"a": 80.0, "b": 90.0}, "ood": {"a": ood, "b": ood + 10}}

    md = study.markdown([cell("lp", 0, 10), cell("lp", 1, 20), cell("learnability", 0, 14),
                         cell("learnability", 1, 22)], "cmd")
    assert "| `lp` | 85.0 ± 0.0 | 20.0 ± 5.0 | – | [0, 1] |" in md
    assert "| `learnability` | 85.0 ± 0.0 | 23.0 ± 4.0 | +3.0 ± 1.0 (2 seeds) | [0, 1] |" in md


@pytest.mark.parametrize("argv, message", [
    (["--scores", "regret"], "'regret' is not one of lp, learnability, lp+learnability"),
    (["--per-split", "0"], "--per-split must be at least 1"),
    (["--lp-runs", "/nonexistent"], "no such folder")])
def test_bad_input_is_refused_before_any_work(argv, message, capsys) -> None:
    try:
        code = study.main(argv)
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    assert code == 2 and message in capsys.readouterr().err
