"""`studies.libero_round_dev` without LIBERO episodes: what it refuses, and the clear error for a
directory that is not a run (that a round's update is redone on exactly the run's episodes is checked on
a real run in `tests/agents/test_run_e2e.py`)."""

from __future__ import annotations

import json

import pytest

from studies import libero_round_dev


@pytest.mark.parametrize("args, says", [
    (["--lrs", "0"], "every lr > 0"),
    (["--scenes", "1"], "--scenes must be >= 2"),
    (["--also", "missing.pt"], "no such checkpoint: missing.pt"),
])
def test_bad_arguments_are_clear_errors(tmp_path, capsys, args, says):
    with pytest.raises(SystemExit):
        libero_round_dev.main(["--run", str(tmp_path), "--out", str(tmp_path / "o"), *args])
    assert says in capsys.readouterr().err


def test_a_directory_that_is_not_a_run(tmp_path, capsys):
    assert libero_round_dev.main(["--run", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_the_halves_are_scored_apart():
    eps = [{"seed": i, "ood": i >= 2, "task": "milk", "start": "own", "success": i in (0, 2, 3),
            "failing_phase": None} for i in range(4)]
    got = libero_round_dev.score(eps, {})
    assert (got["successes"], got["id"], got["ood"]) == (3, "1/2", "2/2")


def test_an_out_folder_of_another_run_is_refused_not_mixed_in(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "results.json").write_text(json.dumps({"run": "runs/other", "dev_seeds": [90000, 90040],
                                                  "ood_from": 90020, "round1_start": {"successes": 3}}))
    with pytest.raises(SystemExit):
        libero_round_dev.main(["--run", str(tmp_path / "mine"), "--out", str(out)])
    assert "holds results of --run runs/other" in capsys.readouterr().err
