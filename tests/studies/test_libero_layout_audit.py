"""`studies.libero_layout_audit` on a run directory written here (two demonstrations of one task) and
evaluation starts given by the test: the nearest item and layout, and the factors of the demonstration
that came nearest; a folder with no demonstration is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim.families.libero_object.scene import TASKS
from studies import libero_layout_audit as audit

FAMILY, KEY = "libero_object", "alphabet_soup"
TASK, ITEM, _, (PARTNER, *_) = TASKS[KEY]


def write_demo(run, name, start, xy):
    """One kept demonstration: its record and its arrays (the item and its first partner at `xy`)."""
    folder = run / "episodes" / "round_01"
    folder.mkdir(parents=True, exist_ok=True)
    scene = {"family": "libero_object", "libero": {"task": TASK},
             "factors": {"task": {"task": KEY}, "spatial": {"start": start, "shift": "none"}}}
    (folder / f"demo_{name}.json").write_text(json.dumps({"scene": scene,
                                                          "layout": {"objects": [ITEM, PARTNER]}}))
    pos = np.zeros((3, 2, 3))
    pos[0, :, :2] = xy
    np.savez(folder / f"demo_{name}.npz", s_obj_pos=pos)


@pytest.fixture
def run(tmp_path, monkeypatch):
    """Two demonstrations: the item at its own start (0, 0), and swapped with its partner but 4 cm off the
    evaluation's place; the evaluation swaps them exactly: item at (0.3, 0), partner at (0, 0)."""
    write_demo(tmp_path, "own", "own", [[0.0, 0.0], [0.3, 0.0]])
    write_demo(tmp_path, "swap", "swap1", [[0.3, 0.04], [0.0, 0.0]])
    starts = {"position": [{ITEM: np.array([0.3, 0.0]), PARTNER: np.array([0.0, 0.0])}] * 2,
              "none": [{ITEM: np.array([0.0, 0.0]), PARTNER: np.array([0.3, 0.0])}]}
    monkeypatch.setattr(audit, "evaluated", lambda suite, task, perturb:
                        starts[perturb] if (suite, task) == (FAMILY, TASK) else [])
    return tmp_path


def test_the_nearest_demonstration_is_measured_by_its_item_and_its_whole_layout(run):
    demos = audit.demonstrations(run)
    assert [(d["task"], d["start"]) for d in demos] == [(KEY, "own"), (KEY, "swap1")]
    row = audit.audit_task(KEY, demos)
    assert row["demonstrations"] == 2 and row["by_start"] == {"own": 1, "swap1": 1}
    assert row["nearest_item_m"] == pytest.approx(0.04) and row["nearest_item_demo"]["start"] == "swap1"
    assert row["nearest_layout_m"] == pytest.approx(0.04)  # the partner stands where the evaluation has it
    assert row["swap_moves_item_m"] == pytest.approx(0.3) and row["evaluated_item_spread_m"] == 0.0
    assert audit.demonstrations(run, through=0) == []  # both are round 1's
    assert len(audit.demonstrations(run, through=1)) == 2


def test_a_folder_without_demonstrations_is_refused(tmp_path, capsys):
    assert audit.main(["--run", str(tmp_path)]) == 2
    assert "no demonstrations of a LIBERO family" in capsys.readouterr().err


def test_a_spatial_run_is_read_by_its_plate(tmp_path):
    """On `libero_spatial` the position perturbation moves the plate: a demonstration's `start` is its
    `plate` factor, and the audited item is the plate."""
    from sim.families.libero_spatial.scene import PLATE
    from sim.families.libero_spatial.scene import TASKS as SPATIAL

    key = next(iter(SPATIAL))
    folder = tmp_path / "episodes" / "round_00"
    folder.mkdir(parents=True)
    scene = {"family": "libero_spatial", "libero": {"task": SPATIAL[key][0]},
             "factors": {"task": {"task": key}, "spatial": {"plate": "swap1", "shift": "plus_y"}}}
    (folder / "demo_a.json").write_text(json.dumps({"scene": scene, "layout": {"objects": [PLATE]}}))
    np.savez(folder / "demo_a.npz", s_obj_pos=np.zeros((2, 1, 3)))
    [demo] = audit.demonstrations(tmp_path)
    assert (demo["family"], demo["task"], demo["start"], demo["shift"]) == ("libero_spatial", key, "swap1",
                                                                          "plus_y")
    assert audit.family_tasks("libero_spatial")[key] == (SPATIAL[key][0], PLATE)


def test_a_goal_drawer_task_is_read_by_its_layout_as_its_cabinet_is_a_fixture(tmp_path, monkeypatch):
    """On `libero_goal` a drawer goal's subject is the cabinet, a fixture: neither a demonstration's record
    nor the evaluation's object positions hold it, so the row measures the movable objects' layout only
    and says why (the run's final audit once stopped on a KeyError here)."""
    from sim.families.libero_goal.scene import TASKS as GOAL

    key = next(k for k, row in GOAL.items() if row[2][0] == "opened")
    task, cabinet = audit.family_tasks("libero_goal")[key]
    folder = tmp_path / "episodes" / "round_00"
    folder.mkdir(parents=True)
    scene = {"family": "libero_goal", "libero": {"task": task},
             "factors": {"task": {"task": key}, "spatial": {"start": "own", "shift": "none"}}}
    (folder / "demo_a.json").write_text(json.dumps({"scene": scene, "layout": {"objects": ["plate_1"]}}))
    pos = np.zeros((2, 1, 3))
    pos[0, 0, :2] = [0.1, 0.0]
    np.savez(folder / "demo_a.npz", s_obj_pos=pos)
    starts = [{"plate_1": np.array([0.0, 0.0])}]
    monkeypatch.setattr(audit, "evaluated", lambda suite, t, perturb: starts)
    monkeypatch.setattr(audit, "moved_fixture", lambda suite, t, name: 0.25 if name == cabinet else None)
    row = audit.audit_task(key, audit.demonstrations(tmp_path))
    assert row["item"] == cabinet and row["item_is_fixture"] is True and "nearest_item_m" not in row
    assert row["swap_moves_item_m"] == 0.25 and row["by_start"] == {"own": 1}
    assert row["nearest_layout_m"] == pytest.approx(0.1)
