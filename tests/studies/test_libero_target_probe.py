"""`studies.libero_target_probe`: the two readings of one state (the target head's most probable item, and the
item the first chunk heads for) from a stand-in policy whose head and chunk are given here; a run without
the asked round's policy is refused in one line that lists the rounds it has."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from studies import libero_target_probe as probe


class StandIn:
    """Names the second item; its chunk moves along −y."""

    def encode(self, batch):
        return torch.zeros(1, 6, 4), torch.ones(1, 6, dtype=torch.bool), torch.zeros(1, 4)

    def target_logits(self, tokens, mask):
        return torch.tensor([[0.0, 3.0, 0.0]])

    def sample_actions(self, batch, generator=None):
        chunk = torch.zeros(1, 4, 7)
        chunk[0, :, 1] = -0.5
        return chunk


def test_the_head_and_the_heading_are_read_apart():
    feats = {"robot": np.zeros(10, np.float32), "objects": np.zeros((3, 5), np.float32),
             "object_mask": np.ones(3, bool), "text": np.zeros(8, np.float32)}
    names = ["a_1", "b_1", "c_1"]
    xy = np.array([[0.3, 0.0], [0.0, 0.3], [0.0, -0.3]])  # c_1 lies along −y from the gripper at (0, 0)
    r = probe.readings(StandIn(), feats, names, np.zeros(2), xy, seed=0)
    assert r["head"] == "b_1" and r["heads_to"] == "c_1"
    assert abs(sum(r["probs"].values()) - 1.0) < 1e-6 and max(r["probs"], key=r["probs"].get) == "b_1"


def test_a_round_without_a_policy_is_refused(tmp_path, capsys):
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "round_00.safetensors").write_bytes(b"")
    with pytest.raises(SystemExit) as end:
        probe.main(["--run", str(tmp_path), "--round", "5"])
    assert end.value.code == 2
    err = capsys.readouterr().err
    assert "round_05.safetensors: no such policy" in err and "round_00" in err


def test_the_suite_is_the_runs_libero_family(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"families": ["libero_spatial"]}')
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "round_00.safetensors").write_bytes(b"")
    assert probe.run_policy(tmp_path, 0)[1] == "libero_spatial"
    (tmp_path / "config.json").write_text('{"families": ["pick_place"]}')
    with pytest.raises(SystemExit) as end:
        probe.main(["--run", str(tmp_path), "--round", "0"])
    assert end.value.code == 2
    assert "'pick_place' is not a LIBERO family" in capsys.readouterr().err
    (tmp_path / "config.json").unlink()
    with pytest.raises(SystemExit) as end:
        probe.main(["--run", str(tmp_path), "--round", "0"])
    assert end.value.code == 2
    assert "not a LIBERO run directory" in capsys.readouterr().err


def test_successes_come_from_a_running_evaluations_task_files(tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "LOOP_RESULTS", tmp_path)
    parts = tmp_path / "run_a" / "round0_position_50ep.tasks"
    parts.mkdir(parents=True)
    (parts / "00_x.json").write_text('{"task": {"name": "x", "successes": 7}}')
    assert probe.evaluated("run_a", 0, "position") == {"x": 7}
    (tmp_path / "run_a" / "round0_position_50ep.json").write_text(
        '{"tasks_run": [{"name": "x", "successes": 9}, {"name": "y", "successes": 0}]}')
    assert probe.evaluated("run_a", 0, "position") == {"x": 9, "y": 0}
    assert probe.evaluated("run_a", 5, "position") == {}


def test_a_goal_about_no_object_is_skipped_not_read(monkeypatch):
    """libero_goal's drawer task: its goal's subject is a cabinet's region, which no token stands for."""
    from types import SimpleNamespace

    from sim.libero.env import LiberoEnv

    closed = []
    env = SimpleNamespace(goal=[["open", "wooden_cabinet_1_middle_region"]], is_object=lambda name: False,
                          close=lambda: closed.append(True))
    monkeypatch.setattr(LiberoEnv, "for_task", staticmethod(lambda task: env))
    task = SimpleNamespace(name="open_the_middle_drawer_of_the_cabinet", instruction="open the middle drawer")
    r = probe.probe_task(task, {}, policy=None, n=10)
    assert r == {"task": task.name,
                 "skipped": "the goal's subject wooden_cabinet_1_middle_region is no object token"}
    assert closed == [True]
