"""Features, collate and ChunkDataset over real expert episodes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coda_policy.dataset import ChunkDataset, load_episodes
from coda_policy.object_token.features import OBJ_DIM, ROBOT_DIM, collate, featurize
from sim.env import SimEnv
from sim.episode import Episode, make_observation, run_episode
from sim.families import get_family

H = 8


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    fam = get_family("pick_place")
    full = run_episode(fam.sample_scene(0))
    sparse = run_episode(fam.sample_scene(1), max_steps=30, record_every=4)
    return [full, sparse]


def test_featurize_shapes_and_relative_position() -> None:
    spec = get_family("pick_place").sample_scene(3)
    s = SimEnv(spec).reset()
    f = featurize(make_observation(spec, s, 0), spec=spec)
    assert f["robot"].shape == (ROBOT_DIM,) and f["objects"].shape == (2, OBJ_DIM)
    assert f["object_mask"].all() and f["text"].shape == (384,)
    np.testing.assert_allclose(f["objects"][0, 3:6], s.obj_pos[0], atol=1e-6)
    np.testing.assert_allclose(f["objects"][0, 6:9], s.obj_pos[0] - s.ee_pos, atol=1e-6)
    assert np.allclose(featurize(s, spec.instruction, spec)["objects"], f["objects"])


def test_featurize_fixture_tokens() -> None:
    spec = get_family("articulated").sample_scene(0)
    s = SimEnv(spec).reset()
    f = featurize(s, spec=spec)
    assert len(f["objects"]) == len(s.layout.objects) + len(s.layout.regions) + len(s.layout.handles)
    assert np.isfinite(f["objects"]).all()


def test_collate_pads_and_masks() -> None:
    a = {
        "robot": np.zeros(ROBOT_DIM),
        "objects": np.ones((2, OBJ_DIM)),
        "object_mask": np.ones(2, bool),
        "text": np.zeros(384),
        "actions": np.zeros((H, 7)),
    }
    b = dict(a, objects=np.ones((4, OBJ_DIM)), object_mask=np.ones(4, bool))
    batch = collate([a, b])
    assert batch["objects"].shape == (2, 4, OBJ_DIM) and batch["object_mask"].dtype == torch.bool
    assert batch["object_mask"].tolist() == [[True, True, False, False], [True] * 4]
    assert batch["objects"][0, 2:].abs().sum() == 0
    assert batch["actions"].shape == (2, H, 7) and batch["actions"].dtype == torch.float32


def test_chunks_of_a_full_episode(episodes: list[Episode]) -> None:
    ep = episodes[0]
    ds = ChunkDataset([ep], H, with_next=True)
    assert len(ds) == ep.steps  # one chunk per action step
    item = ds[3]
    np.testing.assert_allclose(item["actions"], ep.actions[3 : 3 + H])
    assert item["t"] == 3 and item["t_next"] == 3 + H and not item["done"] and item["success"]
    last = ds[len(ds) - 1]
    assert np.allclose(last["actions"], ep.actions[-1])  # padded by repeating the last action
    assert last["done"] and last["t_next"] == ep.steps
    assert ds.next_state(3) is ep.states[3 + H]


def test_chunks_of_a_subsampled_episode(episodes: list[Episode]) -> None:
    ep = episodes[1]
    ds = ChunkDataset([ep], H)
    assert [r.t for r in ds.refs] == [t for t in ep.state_steps.tolist() if t < ep.steps]
    for r in ds.refs:
        assert ep.state_steps[r.j] == r.t_next == min(r.t + H, ep.steps)
    assert ChunkDataset([ep], H, only_success=True).refs == [] or ep.success


def test_from_dir_batch_and_stats(tmp_path, episodes: list[Episode]) -> None:
    for k, ep in enumerate(episodes):
        ep.save(tmp_path / "episodes" / "round_00" / f"ep{k}")
    assert len(load_episodes(tmp_path)) == 2
    ds = ChunkDataset.from_dir(tmp_path, H, with_next=True)
    batch = ds.batch([0, len(ds) - 1])
    assert batch["next_objects"].shape == batch["objects"].shape == (2, 2, OBJ_DIM)
    st = ds.stats()
    assert st.actions.std.min() > 0 and st.robot.mean.shape == (ROBOT_DIM,)
    assert (ds.tensors()["actions"].shape[0]) == len(ds)
