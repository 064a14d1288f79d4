"""The auxiliary target loss (`ObjectTokenConfig.target_loss`): each training state is labelled with the
token of the item its goal is about, the loss teaches a head to name it, a policy trained with it acts,
saves and loads, the loop's advantage-weighted round updates keep training it, and without the option
nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coda_policy.advantages import build_table
from coda_policy.awr import AWRConfig, weighted_update
from coda_policy.dataset import ChunkDataset, goal_token
from coda_policy.object_token.features import token_names
from coda_policy.registry import load_policy, make_config, make_policy
from coda_policy.shaping import ShapingConfig, shape_episodes
from programs.seeds import seed_library
from sim.episode import make_observation, run_episode
from sim.families import get_family
from sim.scene import Predicate

SMALL = {"d_model": 32, "n_layers": 1, "n_decoder_layers": 1, "n_heads": 2, "batch_size": 8}


@pytest.fixture(scope="module")
def demo():
    return run_episode(get_family("pick_place").sample_scene(0))


def test_each_state_is_labelled_with_the_goal_s_item(demo):
    subject = str(demo.scene.goal[0].args[0])
    ds = ChunkDataset([demo], 8, targets=True)
    for s, f in zip(demo.states, ds.features[0], strict=True):
        assert token_names(s)[int(f["target"])] == (subject, "object")
    assert "target" not in ChunkDataset([demo], 8).features[0][0]
    elsewhere = demo.scene.model_copy(update={"goal": (Predicate(fn="inside", args=("no_such_item", "x")),)})
    assert goal_token(demo.states[0], elsewhere) == -1  # a goal about no object token: no label


def test_the_head_learns_to_name_the_item_and_the_policy_round_trips(demo, tmp_path):
    ds = ChunkDataset([demo], 8, targets=True)
    policy = make_policy(make_config("object_token", target_loss=1.0, **SMALL))
    policy.set_stats(ds.stats())
    batch = ds.batch(range(len(ds)))
    opt = torch.optim.AdamW(policy.parameters(), lr=3e-3)
    first = None
    for _ in range(60):
        loss, m = policy(batch)
        first = first if first is not None else m["target_ce"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert m["target_ce"] < first / 4 and m["target_acc"] == 1.0
    with torch.no_grad():  # the head's reading, as a study reads it (`studies.libero_target_probe`)
        logits = policy.target_logits(*policy.encode(batch)[:2])
    assert (logits.argmax(-1) == batch["target"].long().reshape(-1)).all()
    loaded = load_policy(policy.save(tmp_path / "t.safetensors"))
    assert loaded.config.target_loss == 1.0
    act = loaded.bind(demo.scene)(make_observation(demo.scene, demo.states[0], 0))
    assert act.shape == (loaded.config.execute, 7) and np.isfinite(act).all()


def test_without_the_option_a_labelled_batch_trains_as_before(demo):
    ds = ChunkDataset([demo], 8, targets=True)
    plain = make_policy(make_config("object_token", **SMALL))
    plain.set_stats(ds.stats())
    assert not hasattr(plain, "target_head")
    _, m = plain(ds.batch(range(8)))
    assert "target_ce" not in m
    with pytest.raises(ValueError, match="no target head"):
        plain.target_logits(*plain.encode(ds.batch(range(2)))[:2])
    with pytest.raises(ValueError, match="target_loss must be >= 0"):
        make_config("object_token", target_loss=-1.0)


def test_round_updates_carry_the_label(demo):
    """`build_table` (the loop's train node) labels every chunk start; `weighted_update` trains the head."""
    program = seed_library()["pick_place"][1]
    chunks = shape_episodes([demo], ShapingConfig(gamma=0.9), program, h=8, demo_stride=2)
    policy = make_policy(make_config("object_token", target_loss=1.0, **SMALL))
    policy.set_stats(ChunkDataset([demo], 8).stats())
    table = build_table([demo], chunks, policy)
    expected = [goal_token(demo.states[int(i)], demo.scene) for i in chunks.start]
    assert table.inputs["target"].tolist() == expected and min(expected) >= 0
    seen: list[dict[str, float]] = []
    weighted_update(policy, table, torch.ones(len(chunks.start)), AWRConfig(steps=60, batch_size=8, lr=3e-3),
                    on_step=lambda step, m: seen.append(m))
    assert seen[-1]["target_ce"] < seen[0]["target_ce"] / 4
    plain = make_policy(make_config("object_token", **SMALL))
    plain.set_stats(ChunkDataset([demo], 8).stats())
    assert "target" not in build_table([demo], chunks, plain).inputs
