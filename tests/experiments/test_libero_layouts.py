"""`experiments.libero_layouts` without LIBERO episodes: which scenes it would collect in, what it refuses."""

from __future__ import annotations

import json

import pytest

from experiments import libero_layouts


def test_bad_arguments_and_runs_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        libero_layouts.main(["--run", str(tmp_path), "--demos", "1", "--out", str(tmp_path / "o")])
    assert "--demos must be >= 2" in capsys.readouterr().err
    assert libero_layouts.main(["--run", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "give a run directory" in capsys.readouterr().err
    d = tmp_path / "run" / "episodes" / "round_00"
    d.mkdir(parents=True)
    (d / "demo_a.npz").write_bytes(b"")
    (d / "demo_a.json").write_text(json.dumps({"success": True}))
    (tmp_path / "run" / "config.json").write_text(json.dumps({"families": ["pick_place"]}))
    assert libero_layouts.main(["--run", str(tmp_path / "run"), "--out", str(tmp_path / "o")]) == 2
    assert "not ['libero_object']" in capsys.readouterr().err


def test_the_held_out_start_is_none_of_the_training_starts_and_not_the_benchmarks():
    from sim.families.libero_object.scene import FACTORS

    start = next(f for f in FACTORS if f["name"] == "start")
    assert "swap4" in start["ood_choices"] and "swap4" not in libero_layouts.NEW_STARTS
    assert set(libero_layouts.NEW_STARTS) <= set(start["ood_choices"])
    assert libero_layouts.DEMO_SEED0 < libero_layouts.OWN_SEED0 < libero_layouts.DEV_SEED0
