"""`studies.libero_layouts` without LIBERO episodes: which scenes it would collect in, what it refuses."""

from __future__ import annotations

import json

import pytest

from studies import libero_layouts


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


def test_the_mixed_arm_draws_every_in_distribution_layout_and_only_those():
    from sim.families.libero_object.scene import FACTORS

    seen = {f["name"]: set(f["choices"]) for f in FACTORS if f["name"] in ("start", "shift", "wording")}
    drawn = {(x["spatial"]["start"], x["spatial"]["shift"], x["task"]["wording"])
             for x in libero_layouts.MIXED}
    assert drawn == {(s, m, w) for s in seen["start"] for m in seen["shift"] for w in seen["wording"]}
    assert libero_layouts.layout_name(libero_layouts.MIXED[-1]) == "swap1-plus_y-put"
    assert libero_layouts.layout_name({"spatial": {"start": "own"}}) == "own"  # the older arms' file names
    assert libero_layouts.OWN_SEED0 < libero_layouts.MIXED_SEED0 < libero_layouts.DEV_SEED0


def test_two_dart_keeps_only_successful_noisy_demonstrations_and_says_when_too_few(tmp_path):
    d = tmp_path / "episodes" / "round_00"
    d.mkdir(parents=True)
    dart = "expert_dart0.3"
    for name, policy, ok in [("a", dart, True), ("b", "expert", True), ("c", dart, False), ("d", dart, True)]:
        (d / f"demo_{name}.npz").write_bytes(b"")
        (d / f"demo_{name}.json").write_text(json.dumps({"success": ok, "policy": policy}))
    assert [p.stem for p in libero_layouts.dart_only(tmp_path, 2)] == ["demo_a", "demo_d"]
    with pytest.raises(FileNotFoundError, match="2 successful DART seed demonstrations, --demos asks 3"):
        libero_layouts.dart_only(tmp_path, 3)
