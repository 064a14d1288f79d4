"""The frozen-actor ablation in the loop (`shaping` "frozen_actor"): the train node leaves the actor as it
is and saves the round's critic with it; the checkpoint then acts as the Q-selecting policy everywhere a
policy is loaded for acting, and as the bare actor where the next update starts."""

from __future__ import annotations

import dataclasses

import torch

from agents.config import METHODS, LearnConfig
from agents.graph.trainer import PolicyTrainer
from coda_policy.awr import Q_SELECT, QSelectPolicy, SeededPolicy, load_seeded
from coda_policy.checkpoint import load_checkpoint
from coda_policy.registry import make_policy
from programs.seeds import seed_library
from sim.episode import make_observation
from tests.coda_policy.test_awr import TINY
from tests.coda_policy.test_shaping import synthetic_episode


def test_a_frozen_actor_round_keeps_the_actor_and_acts_by_q(tmp_path) -> None:
    assert METHODS.get("coda_frozen_actor").shaping == "frozen_actor"
    start = make_policy(TINY).save(tmp_path / "round_00.safetensors")
    paths = []
    for i, (steps, tau, who) in enumerate([(24, 17, "policy"), (24, None, "policy"), (24, 20, "expert")]):
        paths.append(synthetic_episode(steps, tau, policy=who).save(tmp_path / f"ep{i}.json"))
    cfg = dataclasses.replace(LearnConfig(policy=TINY), critic_hidden=16, critic_steps=10, critic_batch=16,
                              select_k=3)
    trainer = PolicyTrainer(cfg)
    program = seed_library()["pick_place"][1]
    made = trainer.aw_update(start, [(program, paths)], tmp_path / "round_01.safetensors",
                             shaping="frozen_actor", seed=0)
    assert made["shaping"] == "frozen_actor" and made["select_k"] == 3 and made["chunks"] > 0
    ckpt = load_checkpoint(tmp_path / "round_01.safetensors")
    before = load_checkpoint(start)
    assert Q_SELECT in ckpt and ckpt[Q_SELECT]["k"] == 3
    assert all(torch.equal(ckpt["state_dict"][k], v) for k, v in before["state_dict"].items())  # not updated
    acting = load_seeded(tmp_path / "round_01.safetensors", 5)
    assert isinstance(acting, QSelectPolicy) and acting.k == 3
    assert not isinstance(load_seeded(tmp_path / "round_01.safetensors", 5, fresh=True), QSelectPolicy)
    ep = synthetic_episode(8, None)
    act = SeededPolicy(str(tmp_path / "round_01.safetensors"), 5)(ep.scene)(
        make_observation(ep.scene, ep.states[0], 0))
    assert act.shape == (TINY.execute, 7)
    # the next round starts from the bare actor and again leaves it as it is
    trainer.aw_update(tmp_path / "round_01.safetensors", [(program, paths)],
                      tmp_path / "round_02.safetensors", shaping="frozen_actor", seed=1)
    again = load_checkpoint(tmp_path / "round_02.safetensors")
    assert all(torch.equal(again["state_dict"][k], v) for k, v in before["state_dict"].items())
