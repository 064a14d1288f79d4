"""`studies.libero_place_trace`: which place an object ended nearer (where the perturbed file puts the
target, or the target's own region), with a margin for neither; a run that is not a LIBERO run, or lacks
the round's policy, is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from studies import libero_place_trace as trace


def test_the_nearer_place_and_the_margin():
    target, own = np.array([0.0, 0.0]), np.array([0.2, 0.0])
    assert trace.nearer(np.array([0.01, 0.0]), target, own) == "target"
    assert trace.nearer(np.array([0.19, 0.01]), target, own) == "own"
    assert trace.nearer(np.array([0.1, 0.3]), target, own) == "neither"  # as far from both


def test_a_run_without_the_policy_or_a_libero_family_is_refused(tmp_path, capsys):
    (tmp_path / "policy").mkdir()
    with pytest.raises(SystemExit) as end:
        trace.main(["--run", str(tmp_path), "--round", "0"])
    assert end.value.code == 2
    assert "round_00.safetensors: no such policy" in capsys.readouterr().err
    (tmp_path / "policy" / "round_00.safetensors").write_bytes(b"")
    (tmp_path / "config.json").write_text('{"families": ["pick_place"]}')
    with pytest.raises(SystemExit) as end:
        trace.main(["--run", str(tmp_path), "--round", "0"])
    assert end.value.code == 2
    assert "'pick_place' is not a LIBERO family" in capsys.readouterr().err


def test_only_a_lifted_failure_says_where_it_was_put():
    rows = [{"success": True, "lifted": True, "nearer": "target"},
            {"success": False, "lifted": True, "nearer": "own"},
            {"success": False, "lifted": False, "nearer": "own"}]  # never carried: where it started
    s = trace.summary(rows)
    assert (s["episodes"], s["successes"], s["failed_lifted"]) == (3, 1, 1)
    assert s["failed_nearer"] == {"target": 0, "own": 1, "neither": 0}


def test_a_target_is_an_object_or_a_region_site():
    from types import SimpleNamespace

    box = SimpleNamespace(center=np.array([0.1, 0.2, 0.9]))
    env = SimpleNamespace(is_object=lambda n: n == "plate_1", box=lambda n: box,
                          has_site=lambda n: n == "flat_stove_1_cook_region",
                          site_pos=lambda n: np.array([-0.25, 0.2, 0.95]))
    assert trace.place(env, "plate_1").tolist() == [0.1, 0.2]
    assert trace.place(env, "flat_stove_1_cook_region").tolist() == [-0.25, 0.2]
    assert trace.place(env, "wooden_cabinet_1_middle_region") is None  # a drawer to open: no place
