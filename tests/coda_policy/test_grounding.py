"""The grounding column (`ObjectTokenConfig.grounding`): each object token's instruction ↔ category-words
cosine — it names the instruction's item among LIBERO-Object's, a grounded policy trains, acts, saves and
loads with it, and a checkpoint saved before it existed loads with it off."""

from __future__ import annotations

import numpy as np
import pytest

from coda_policy.checkpoint import save_checkpoint
from coda_policy.dataset import ChunkDataset
from coda_policy.object_token.features import OBJ_DIM, collate, featurize, grounding_scores, obj_dim
from coda_policy.registry import load_policy, make_config, make_policy
from common.text import default_embedder
from sim.episode import make_observation, run_episode
from sim.families import get_family

ITEMS = ("alphabet soup", "cream cheese", "salad dressing", "bbq sauce", "ketchup", "tomato sauce", "butter",
         "milk", "chocolate pudding", "orange juice")
SMALL = {"d_model": 32, "n_layers": 1, "n_decoder_layers": 1, "n_heads": 2, "batch_size": 8}


def test_the_score_is_highest_for_the_item_the_words_name_in_every_wording():
    emb = default_embedder()
    for item in ITEMS:
        for text in (f"Pick the {item} and place it in the basket",
                     f"grab the {item} and drop it in the basket", f"the basket needs the {item} in it"):
            scores = grounding_scores(ITEMS, emb.embed(text), emb)[:, 0]
            assert ITEMS[int(np.argmax(scores))] == item, (text, scores.round(2).tolist())


@pytest.fixture(scope="module")
def demo():
    return run_episode(get_family("pick_place").sample_scene(0))


def test_a_grounded_policy_trains_acts_and_round_trips(demo, tmp_path):
    f = featurize(demo.states[0], demo.scene.instruction, demo.scene, grounding=True)
    plain = featurize(demo.states[0], demo.scene.instruction, demo.scene)
    assert f["objects"].shape[1] == obj_dim(True) == OBJ_DIM + 1 and plain["objects"].shape[1] == OBJ_DIM
    assert np.array_equal(f["objects"][:, :OBJ_DIM], plain["objects"])
    with pytest.raises(ValueError, match="different widths"):
        collate([f, plain])
    ds = ChunkDataset([demo], 8, grounding=True)
    policy = make_policy(make_config("object_token", grounding=True, **SMALL))
    policy.set_stats(ds.stats())
    loss, _ = policy(ds.batch(range(8)))
    loss.backward()
    path = policy.save(tmp_path / "g.safetensors")
    loaded = load_policy(path)
    assert loaded.config.grounding
    act = loaded.bind(demo.scene)(make_observation(demo.scene, demo.states[0], 0))
    assert act.shape == (loaded.config.execute, 7) and np.isfinite(act).all()


def test_a_checkpoint_saved_without_the_option_loads_with_it_off(tmp_path):
    policy = make_policy(make_config("object_token", **SMALL))
    ckpt = policy.checkpoint()
    del ckpt["config"]["grounding"]  # what a checkpoint from before the option holds
    save_checkpoint(ckpt, tmp_path / "old.safetensors")
    assert load_policy(tmp_path / "old.safetensors").config.grounding is False
