"""The advantage weights a weighted update keeps per chunk, and how the LeRobot export spreads them over
frames (no lerobot needed: the dataset writing itself is tested in test_pi05.py, in .venv-pi05)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from agents.graph.trainer import chunk_weights_path, save_chunk_weights
from coda_policy.export_lerobot import frame_weights, run_weights


def test_frames_take_the_weight_of_the_chunk_they_belong_to():
    w = frame_weights({2: 0.5, 6: 1.5, 40: 9.0}, 10)
    np.testing.assert_array_equal(np.isnan(w), [True, True] + [False] * 8)
    np.testing.assert_allclose(w[2:], [0.5] * 4 + [1.5] * 4)


def test_run_weights_reads_every_round_later_rounds_winning(tmp_path):
    (tmp_path / "policy").mkdir()
    chunks = SimpleNamespace(episode=np.array([0, 0, 1]), start=np.array([0, 8, 0]), demo=np.array([1, 1, 0]))
    pol = tmp_path / "policy"
    save_chunk_weights(pol / "round_01.safetensors", ["/a.npz", "/b.npz"], chunks, np.array([1, 2, 3.0]))
    later = SimpleNamespace(episode=np.array([0]), start=np.array([8]), demo=np.array([1]))
    save_chunk_weights(tmp_path / "policy" / "round_02.safetensors", ["/a.npz"], later, np.array([7.0]))
    assert chunk_weights_path(tmp_path / "policy" / "round_02.safetensors").is_file()
    assert run_weights(tmp_path) == {"/a.npz": {0: 1.0, 8: 7.0}, "/b.npz": {0: 3.0}}
