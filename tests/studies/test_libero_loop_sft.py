"""`studies.libero_loop_sft` without LIBERO episodes: which demonstrations it trains on, what it
refuses."""

from __future__ import annotations

import json

import pytest

from studies import libero_loop_sft


def test_the_first_successful_seed_demonstrations_by_name_and_a_clear_error_without_any(tmp_path):
    d = tmp_path / "run" / "episodes" / "round_00"
    d.mkdir(parents=True)
    for name, ok in (("demo_c", True), ("demo_a", False), ("demo_b", True), ("demo_d", True)):
        (d / f"{name}.npz").write_bytes(b"")
        (d / f"{name}.json").write_text(json.dumps({"success": ok}))
    assert [p.stem for p in libero_loop_sft.seed_demos(tmp_path / "run", 2)] == ["demo_b", "demo_c"]
    with pytest.raises(FileNotFoundError, match="no successful"):
        libero_loop_sft.seed_demos(tmp_path, 2)


def test_bad_arguments_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        libero_loop_sft.main(["--run", str(tmp_path), "--variants", "dropout", "--out", str(tmp_path)])
    assert "choose from plain, ema, grounding" in capsys.readouterr().err
    assert libero_loop_sft.main(["--run", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "give a run directory" in capsys.readouterr().err


def test_demonstrations_from_another_directory(tmp_path):
    d = tmp_path / "elsewhere"
    d.mkdir()
    for name, ok in (("demo_b", True), ("demo_a", False), ("demo_c", True)):
        (d / f"{name}.npz").write_bytes(b"")
        (d / f"{name}.json").write_text(json.dumps({"success": ok}))
    got = libero_loop_sft.seed_demos(tmp_path / "no-run", 5, d)
    assert [p.stem for p in got] == ["demo_b", "demo_c"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no successful demo"):
        libero_loop_sft.seed_demos(tmp_path, 5, empty)


def test_a_scene_start_is_its_family_first_spatial_factor_for_both_libero_families():
    from sim.families import get_family

    obj = get_family("libero_object").make_scene({"spatial": {"start": "swap1"}}, 3)
    spatial = get_family("libero_spatial").make_scene(
        {"task": {"task": "on_stove"}, "spatial": {"plate": "swap2"}}, 3)
    assert (libero_loop_sft.start_of(obj), libero_loop_sft.start_of(spatial)) == ("swap1", "swap2")
