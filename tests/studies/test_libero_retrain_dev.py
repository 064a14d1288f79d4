"""`studies.libero_retrain_dev` without LIBERO episodes: what it refuses, the clear error for a directory that
is not a run, and the layouts of its two kinds of new demonstration (never LIBERO-Pro's own partner, never a
seen shift or wording in `all`)."""

from __future__ import annotations

import pytest

from sim.families.libero_object.scene import FACTORS
from studies import libero_retrain_dev


@pytest.mark.parametrize("args", [["--demos", "0"], ["--per-task", "0"]])
def test_bad_arguments_are_clear_errors(tmp_path, capsys, args):
    with pytest.raises(SystemExit):
        libero_retrain_dev.main(["--run", str(tmp_path), "--out", str(tmp_path / "o"), *args])
    assert "must be >= 1" in capsys.readouterr().err


def test_a_directory_that_is_not_a_run(tmp_path, capsys):
    assert libero_retrain_dev.main(["--run", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_start_moves_only_the_start_and_all_moves_every_factor_out_of_distribution():
    factor = {f["name"]: f for f in FACTORS}
    start = libero_retrain_dev.layouts("start")
    assert start == ({"spatial": {"start": "swap2"}}, {"spatial": {"start": "swap3"}})
    every = libero_retrain_dev.layouts("all")
    assert len(every) == 2 * 3 * 2 and len({str(x) for x in every}) == 12
    for x in every:
        assert x["spatial"]["start"] in factor["start"]["ood_choices"]
        assert x["spatial"]["shift"] in factor["shift"]["ood_choices"]
        assert x["task"]["wording"] in factor["wording"]["ood_choices"]
    # the unshown partner the development scenes score (swap4) is in neither kind
    assert not any(x["spatial"]["start"] == "swap4" for x in start + every)
