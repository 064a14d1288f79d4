"""The π0.5 backend (lerobot's PI05, tiny configuration, CPU): weighted per-sample losses, the training and
the KV-cached inference paths agree, select_action in a real episode, an exact save/load round trip.

Runs in the environment `make setup-pi05` builds (.venv-pi05; `make test` runs this file there); in the
default environment, without lerobot, this module is skipped (test_pi05_registry.py runs there)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from coda_policy.pi05.configuration_pi05 import PI05_TINY

lerobot = pytest.importorskip("lerobot", reason="the π0.5 backend lives in .venv-pi05 (make setup-pi05)")

from coda_policy.checkpoint import read_meta  # noqa: E402
from coda_policy.pi05.data import samples  # noqa: E402
from coda_policy.pi05.modeling_pi05 import Pi05Policy, QuantileStats  # noqa: E402
from coda_policy.registry import load_policy, make_policy  # noqa: E402
from sim.episode import run_episode  # noqa: E402
from sim.families import get_family  # noqa: E402

FAM = get_family("pick_place")
SPEC = FAM.make_scene(FAM.default_factors())


@pytest.fixture(scope="module")
def demo():
    return run_episode(SPEC, max_steps=40)


@pytest.fixture(scope="module")
def data(demo):
    return samples([demo], PI05_TINY.chunk, PI05_TINY.cameras, PI05_TINY.image_size, stride=4,
                   only_success=False)


@pytest.fixture()
def policy(data) -> Pi05Policy:
    p = make_policy(PI05_TINY)
    p.fit_stats(data.states, data.actions)
    return p


def _batch(p: Pi05Policy, data, n: int = 4):
    return p.features(data.instructions[:n], data.states[:n], data.images[:n], data.actions[:n])


def test_samples_carry_frames_state_and_chunks(data, demo):
    n = len(data.actions)
    assert data.images.shape == (n, 2, 32, 32, 3) and data.images.dtype == np.uint8
    assert data.actions.shape == (n, 8, 7) and data.states.shape == (n, 10)
    np.testing.assert_allclose(data.actions[0], demo.actions[:8])


def test_prompt_holds_the_instruction_and_the_binned_state(policy, data):
    tokens, mask = policy.tokenize(data.instructions[:1], data.states[:1])
    text = policy.tokenizer.decode(tokens[0][mask[0]], skip_special_tokens=True)
    assert text.startswith(f"Task: {SPEC.instruction.strip()}, State: ") and text.endswith(";\nAction: ")
    bins = [int(b) for b in text.split("State: ")[1].split(";")[0].split()]
    assert len(bins) == PI05_TINY.max_state_dim and all(0 <= b <= 255 for b in bins)
    assert int(mask[0].sum()) < PI05_TINY.tokenizer_max_length  # nothing truncated


def test_weighted_loss_is_the_mean_of_weighted_per_sample_losses(policy, data):
    batch = _batch(policy, data)
    torch.manual_seed(1)
    per, _ = policy.model.forward(policy._lerobot_batch(batch), reduction="none")
    w = torch.tensor([2.0, 0.0, 1.0, 0.5])
    torch.manual_seed(1)
    loss, metrics = policy(batch, w)
    torch.testing.assert_close(loss, (w * per).mean())
    assert metrics["weight_max"] == 2.0
    loss.backward()
    expert = policy.model.model.paligemma_with_expert.gemma_expert
    vision = policy.model.model.paligemma_with_expert.paligemma.model.vision_tower
    for module in (expert, vision, policy.model.model.action_in_proj):
        grads = [q.grad for q in module.parameters() if q.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads)
        assert any(g.abs().sum() > 0 for g in grads)


def test_training_and_cached_inference_paths_agree(policy, data):
    """The joint prefix+suffix pass that training runs and the prefix-cache + suffix pass of the sampler
    (coda_policy.pi05.gemma_adarms) compute the same velocity for the same noisy chunk and time."""
    m = policy.model.model
    lb = policy._lerobot_batch(_batch(policy, data, 2))
    images, img_masks = policy.model._preprocess_images(lb)
    tokens, masks = lb["observation.language.tokens"], lb["observation.language.attention_mask"]
    actions = policy.model.prepare_action(lb)
    noise, time = torch.randn_like(actions), torch.tensor([0.3, 0.8])
    seen = []
    hook = m.action_out_proj.register_forward_hook(lambda mod, args, out: seen.append(out.detach()))
    with torch.no_grad():
        m.forward(images, img_masks, tokens, masks, actions, noise=noise, time=time)
        from lerobot.policies.pi05.modeling_pi05 import make_att_2d_masks

        pe, pm, pa = m.embed_prefix(images, img_masks, tokens, masks)
        _, cache = m.paligemma_with_expert.forward(
            attention_mask=m._prepare_attention_masks_4d(make_att_2d_masks(pm, pa)),
            position_ids=torch.cumsum(pm, dim=1) - 1, past_key_values=None, inputs_embeds=[pe, None],
            use_cache=True)
        x_t = time[:, None, None] * noise + (1 - time[:, None, None]) * actions
        m.denoise_step(pm, cache, x_t, time)
    hook.remove()
    torch.testing.assert_close(seen[1], seen[0], atol=1e-5, rtol=1e-4)
    assert seen[0].abs().max() > 0


def test_a_few_sft_steps_lower_the_loss(policy, data):
    batch = _batch(policy, data, len(data.actions))

    def loss() -> float:
        torch.manual_seed(7)
        with torch.no_grad():
            return float(policy(batch)[0])

    before = loss()
    opt = torch.optim.AdamW(policy.parameters(), lr=3e-3)
    torch.manual_seed(0)
    for _ in range(40):
        value, _ = policy(batch)
        opt.zero_grad()
        value.backward()
        opt.step()
    assert loss() < 0.7 * before


def test_select_action_in_a_real_episode_and_save_load_give_identical_actions(policy, tmp_path):
    ep = run_episode(SPEC, policy.bind(SPEC), max_steps=12, policy_name="pi05")
    assert ep.actions.shape == (12, 7) and np.abs(ep.actions).max() <= 1.0
    path = policy.save(tmp_path / "pi05.safetensors")
    again = load_policy(path)
    assert isinstance(again, Pi05Policy) and again.config == policy.config
    a = run_episode(SPEC, policy.bind(SPEC), max_steps=12).actions
    b = run_episode(SPEC, again.bind(SPEC), max_steps=12).actions
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, ep.actions)  # reset reseeds the sampling noise


def test_quantile_stats_map_q01_q99_to_unit_range():
    rng = np.random.default_rng(0)
    st = QuantileStats.fit(rng.normal(size=(1000, 3)), rng.uniform(-0.5, 0.5, size=(100, 4, 2)))
    x = torch.tensor(st.actions, dtype=torch.float32)
    torch.testing.assert_close(QuantileStats._norm(x, st.actions), torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))
    torch.testing.assert_close(QuantileStats._denorm(torch.zeros(2), st.actions),
                               torch.tensor(st.actions.mean(0), dtype=torch.float32))


def test_wrong_images_are_a_clear_error(policy, data):
    with pytest.raises(ValueError, match="this policy takes"):
        policy.features(data.instructions[:1], data.states[:1], data.images[:1, :1])
    bad = dataclasses.replace(PI05_TINY, tokenizer="/nonexistent/tokenizer")
    with pytest.raises(FileNotFoundError, match="tokenizer folder"):
        make_policy(bad)


def test_export_lerobot_round_trip(demo, tmp_path):
    """Our episodes written as a LeRobotDataset v3 read back through lerobot's own loader, offline:
    frames, states, actions and tasks equal."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from coda_policy.export_lerobot import export, main
    from sim.render import frames_at

    short = dataclasses.replace(demo, actions=demo.actions[:6], states=demo.states[:7],
                                state_steps=demo.state_steps[:7], phases=demo.phases[:7])
    export([short, short], tmp_path / "ds", size=24)
    ds = LeRobotDataset("coda/run", root=tmp_path / "ds")
    assert ds.num_episodes == 2 and ds.num_frames == 12
    want = frames_at(short, range(6), ("front", "wrist"), 24)
    for t in (0, 5, 6 + 3):
        item = ds[t]
        k = t % 6
        np.testing.assert_allclose(item["action"].numpy(), short.actions[k], atol=1e-6)
        assert item["task"] == SPEC.instruction
        img = (item["observation.images.wrist"].numpy().transpose(1, 2, 0) * 255).round().astype(np.uint8)
        np.testing.assert_array_equal(img, want[k, 1])
        assert bool(item["is_demo"]) and item["observation.state"].shape == (10,)
        assert np.isnan(float(item["advantage_weight"]))  # no weighted update saw these episodes
    short.save(tmp_path / "eps" / "e0")
    with pytest.raises(SystemExit, match="exists; choose a new --out"):
        main([str(tmp_path / "eps"), "--out", str(tmp_path / "ds")])
    with pytest.raises(SystemExit, match="no episodes"):
        main([str(tmp_path / "ds" / "meta"), "--out", str(tmp_path / "ds2")])


def test_the_loop_runs_with_pi05_tiny(tmp_path):
    """`python -m agents.run --preset smoke --policy pi05_tiny`: the bootstrap SFT and a round's
    advantage-weighted update (chunk critic on PI05's prefix features) train π0.5 through the loop's own
    `train` node; every checkpoint is a pi05 one and the run's config.json builds the backend back."""
    import json
    import subprocess
    import sys

    from agents.config import RunConfig

    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "agents.run", "--preset", "smoke", "--policy", "pi05_tiny",
                           "--rounds", "1", "--out", str(out), "--quiet"], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    trains = [r["train"] for r in rows if isinstance(r.get("train"), dict)]
    updates = [t["update"] for t in trains if "update" in t]
    assert updates[:2] == ["sft", "aw"], updates
    ckpts = sorted((out / "policy").glob("round_*.safetensors"))
    assert ckpts
    for ckpt in ckpts:
        assert read_meta(ckpt)["config"]["type"] == "pi05"
    cfg = RunConfig.from_json((out / "config.json").read_text())
    assert cfg.learn.policy == PI05_TINY

    # the weighted update kept each chunk's weight; the export turns them into a column
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from coda_policy.export_lerobot import export, run_weights
    from sim.episode import Episode

    by_file = run_weights(out)
    assert by_file and all(np.isfinite(list(w.values())).all() for w in by_file.values())
    files = sorted(by_file)[:2]
    export([Episode.load(f) for f in files], tmp_path / "ds", size=16, weights=[by_file[f] for f in files])
    ds = LeRobotDataset("coda/run", root=tmp_path / "ds")
    first = min(by_file[files[0]])
    assert float(ds[first]["advantage_weight"]) == pytest.approx(by_file[files[0]][first])


def test_full_size_pi05_builds_with_the_checkpoint_parameter_names():
    """π0.5's own sizes (PaliGemma 2B + 300M expert), built on the meta device (no memory): our adaRMS Gemma
    gives the action expert's norms the `.dense` (3·1024 × 1024) layers that released checkpoints carry and
    lerobot's key fixer expects, and leaves PaliGemma's norms plain."""
    from lerobot.policies.pi05.configuration_pi05 import PI05Config
    from lerobot.policies.pi05.modeling_pi05 import PI05Pytorch

    with torch.device("meta"):
        sd = PI05Pytorch(PI05Config(device="cpu")).state_dict()
    expert = "paligemma_with_expert.gemma_expert.model"
    vlm = "paligemma_with_expert.paligemma.model.language_model"
    assert sd[f"{expert}.layers.17.input_layernorm.dense.weight"].shape == (3 * 1024, 1024)
    assert sd[f"{expert}.norm.dense.bias"].shape == (3 * 1024,)
    assert f"{expert}.layers.0.input_layernorm.weight" not in sd
    assert sd[f"{vlm}.layers.17.post_attention_layernorm.weight"].shape == (2048,)
    assert sum(v.numel() for v in sd.values()) > 3e9


def test_a_missing_pretrained_folder_is_a_clear_error():
    bad = dataclasses.replace(PI05_TINY, pretrained="/nonexistent/pi05")
    with pytest.raises(FileNotFoundError, match="π0.5 checkpoint folder"):
        make_policy(bad)
