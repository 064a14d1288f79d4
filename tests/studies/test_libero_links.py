"""`studies.libero_links` reads the committed LIBERO loop records: the factor each diagnosis named, and the
scenes a round gave the position factor."""

from __future__ import annotations

import pytest

from studies import libero_links as ll


def test_the_committed_runs_read_as_findings_50_says() -> None:
    s37 = ll.run_links(ll.LOOP / "libero_s37")
    assert s37["named"] == {"shift": 6} and s37["diagnoses"] == 6
    assert [r["start_scenes"] for r in s37["rounds"]] == [1, 1, 0]
    assert all(r["scenes"] == 3 for r in s37["rounds"])
    assert ll.moves_start("var_task_ketchup__start_swap2__shift_minus_y")
    assert ll.moves_start("plate_transport") and not ll.moves_start("shift_approach")


def test_a_run_without_records_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert ll.main(["--runs", "libero_s99"]) == 2
    assert "no committed records for libero_s99" in capsys.readouterr().err
