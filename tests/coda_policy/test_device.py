"""Devices: names checked before any work, `auto` falls back to the CPU, a missing GPU is an actionable
error, the run's devices reach the trainer and the rollout factory, checkpoints are CPU tensors; and, where a
CUDA device exists (`gpu` marker, run by `make test` on such a machine), SFT, the critic and the weighted
update train there and the checkpoint acts on the CPU exactly as on the GPU up to float rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.config import LearnConfig
from agents.graph.trainer import PolicyTrainer
from coda_policy.awr import AWRConfig, SeededPolicy, advantage_weighted_update, load_seeded
from coda_policy.critic import ChunkCriticConfig
from coda_policy.device import DeviceUnavailable, check_device_spec, resolve_device
from coda_policy.registry import load_policy, make_policy
from coda_policy.sft import SFTConfig, train
from sim.episode import make_observation
from tests.coda_policy.test_awr import TINY, _table
from tests.coda_policy.test_shaping import synthetic_episode


@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:0", "cuda:12", "auto"])
def test_device_names_accepted(spec: str) -> None:
    assert check_device_spec(spec) == spec
    assert LearnConfig(device=spec, rollout_device=spec).device == spec


@pytest.mark.parametrize("spec", ["gpu", "CUDA", "cuda:", "cuda:x", "mps ", ""])
def test_device_names_rejected(spec: str) -> None:
    with pytest.raises(ValueError, match="device must be one of cpu, cuda, cuda:N, auto"):
        check_device_spec(spec)
    with pytest.raises(ValueError, match="device must be one of"):
        LearnConfig(device=spec)
    with pytest.raises(ValueError, match="device must be one of"):
        AWRConfig(device=spec)
    with pytest.raises(ValueError, match="device must be one of"):
        SFTConfig(device=spec)


def test_without_cuda_auto_is_the_cpu_and_cuda_says_how_to_get_it(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    for spec in ("cuda", "cuda:1"):
        with pytest.raises(DeviceUnavailable, match=rf"'{spec}' asked for.*--index-url .*--device cpu"):
            resolve_device(spec)


def test_a_missing_gpu_index_is_named(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(DeviceUnavailable, match=r"'cuda:3'.*sees 1 CUDA device"):
        resolve_device("cuda:3")


def test_the_run_devices_reach_the_trainer_and_the_rollout_factory(tmp_path) -> None:
    trainer = PolicyTrainer(LearnConfig(device="auto", rollout_device="cuda:1"))
    factory = trainer.factory(tmp_path / "p.safetensors", seed=3)
    assert isinstance(factory, SeededPolicy) and factory.device == "cuda:1" and factory.seed == 3
    assert PolicyTrainer(LearnConfig()).factory(tmp_path / "p.safetensors", 0).device == "cpu"


def _sft_cfg(device: str) -> SFTConfig:
    return SFTConfig(name="dev", demos=1, steps=4, warmup=1, ema=0.0, policy=TINY, log_every=4, device=device)


def test_cpu_training_is_reproducible_and_checkpoints_are_cpu_tensors(tmp_path) -> None:
    """The device-aware loops on the CPU: the same seed trains the same weights twice, and what is saved
    loads as CPU tensors equal to the trained ones."""
    def trained():
        policy, table = _table([synthetic_episode(16, None), synthetic_episode(16, 12, policy="expert")])
        data = {k: table.inputs[k] for k in ("robot", "objects", "object_mask", "text", "actions")}
        train(policy, data, _sft_cfg("cpu"))
        advantage_weighted_update(policy, table, ChunkCriticConfig(hidden=16, steps=5, batch_size=16),
                                  AWRConfig(steps=4, batch_size=16, folds=2, device="cpu"))
        return policy

    a, b = trained(), trained()
    for (k, v), w in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(v, w), k
    loaded = load_policy(a.save(tmp_path / "p.safetensors"))
    for k, v in loaded.state_dict().items():
        assert v.device.type == "cpu" and torch.equal(v, a.state_dict()[k]), k


# ---- on a GPU -------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_training_on_cuda_and_acting_anywhere(tmp_path) -> None:
    dev = resolve_device("cuda")
    policy, table = _table([synthetic_episode(16, None), synthetic_episode(16, 12, policy="expert")])
    data = {k: table.inputs[k] for k in ("robot", "objects", "object_mask", "text", "actions")}
    speed = train(policy, data, _sft_cfg("cuda"))
    assert speed["train_s"] > 0 and next(policy.parameters()).device.type == "cuda"
    m = advantage_weighted_update(policy, table, ChunkCriticConfig(hidden=16, steps=20, batch_size=16),
                                  AWRConfig(steps=10, batch_size=16, folds=2, device="cuda"))
    assert np.isfinite(m["update"]["flow_mse_last"]) and np.isfinite(m["weights"]["w_mean"])
    assert next(policy.parameters()).device == torch.device(dev.type, dev.index or 0)

    path = policy.save(tmp_path / "p.safetensors")
    on_cpu = load_seeded(path, seed=5, fresh=True)
    on_gpu = load_seeded(path, seed=5, fresh=True, device="cuda")
    assert next(on_cpu.parameters()).device.type == "cpu"
    ep = synthetic_episode(16, 12, policy="expert")
    obs = make_observation(ep.scene, ep.states[0], 0)
    act = [p.bind(ep.scene)(obs) for p in (on_cpu, on_gpu)]  # the same initial noise (a CPU generator)
    assert act[0].shape == (TINY.execute, 7)
    np.testing.assert_allclose(act[0], act[1], atol=1e-4)
    fresh = make_policy(TINY).to(dev)
    fresh.reset(ep.scene)
    assert fresh.select_action(obs).shape == (TINY.execute, 7)
