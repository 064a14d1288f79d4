"""`studies.libero_links` reads the committed LIBERO loop records: the factor each diagnosis named, and the
scenes a round gave the position factor."""

from __future__ import annotations

import pytest

from studies import libero_links as ll


def test_the_committed_runs_read_as_findings_50_says() -> None:
    s37 = ll.run_links(ll.LOOP / "libero_s37")
    assert s37["named"] == {"shift": 6} and s37["diagnoses"] == 6
    assert [r["start_scenes"] for r in s37["rounds"]] == [1, 1, 0]
    # the training scenes (generation.arms: budget 4, every one trained on), not the 3 measurement scenes
    assert all(r["scenes"] == 4 for r in s37["rounds"])
    arms = ["seed|libero_object×2", "var_a__start_swap2|libero_object×1", "seed|libero_object×0"]
    assert ll.training_arms({"generation": {"arms": arms}}) == [("seed", 2), ("var_a__start_swap2", 1),
                                                                ("seed", 0)]
    assert ll.moves_start("var_task_ketchup__start_swap2__shift_minus_y")
    assert ll.moves_start("plate_transport") and not ll.moves_start("shift_approach")


def test_a_run_without_records_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert ll.main(["--runs", "libero_s99"]) == 2
    assert "no committed records for libero_s99" in capsys.readouterr().err


def test_the_position_factors_values_among_the_training_scenes_are_tabled_where_recorded(tmp_path) -> None:
    import json
    import shutil

    folder = tmp_path / "libero_x"
    shutil.copytree(ll.LOOP / "libero_s37", folder)
    trained = [{"round": 1, "scenes": 128, "factors": {"start": {"own": 16, "swap3": 112},
                                                       "task": {"ketchup": 100, "milk": 28}}}]
    (folder / "run_trained.json").write_text(json.dumps(trained))
    text = ll.markdown([ll.run_links(folder), ll.run_links(ll.LOOP / "libero_s37")], "cmd")
    assert "| libero_x | 1 | 128 | `start` own ×16, swap3 ×112 | 2 |" in text
    assert "| libero_s37 | 1 | 128" not in text  # a record without the file adds no row
