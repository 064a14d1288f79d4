"""`studies.reverify` on the smoke table's CoDA cell: the loop's own rule reproduces every recorded
verdict; another rule gives verdicts for the same diagnoses; bad input is refused with a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from studies import reverify

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests


def test_the_loops_rule_reproduces_the_recorded_verdicts_and_another_rule_runs(smoke_table) -> None:
    out, _, _ = smoke_table
    run = out / "coda_seed0"
    files = sorted((run / "diagnoses" / "round_01").glob("*.json"))
    # the smoke preset's policy (20 SFT steps) fails most scenes, so round 1 always has a failure to
    # diagnose (`diagnose_max` = 1 of them): none means the loop did not diagnose, not a reason to pass
    assert len(files) == 1, f"{run}: round 1 wrote {len(files)} diagnoses, not the smoke preset's one"
    same = reverify.reverify(run, 1, control="other", count="any", n=None, workers=1, log=lambda _: None)
    assert len(same["rows"]) == len(files)
    for row in same["rows"]:
        assert row["status"] == row["recorded"] and row["rates"] == pytest.approx(row["recorded_rates"])
    moved = reverify.reverify(run, 1, control="moveback", count="any", n=None, workers=1, log=lambda _: None)
    assert [r["episode"] for r in moved["rows"]] == [r["episode"] for r in same["rows"]]
    assert moved["control"] == "moveback" and all(r["control_factor"] == r["factor"] for r in moved["rows"])


def test_bad_input_is_refused_with_a_message(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        reverify.main([str(tmp_path)])
    assert "not a run directory" in capsys.readouterr().err
