"""`Pi05Policy`: lerobot's PI05 behind the verbs every backend speaks (`coda_policy.registry`).

Data it speaks (`features` / `observation_features` build it):
- "images" (B, n_cameras, 3, S, S) uint8 — the config's cameras at image_size, rendered by the episode
  runner (`sim.episode.run_episode` asks a policy for its `cameras`) or by replaying recorded episodes
  (`sim.render.frames_at`);
- "tokens", "token_mask" (B, L) — π0.5's prompt `Task: <instruction>, State: <256-bin state>;\nAction: `
  (as lerobot's Pi05PrepareStateTokenizerProcessorStep writes it; the state normalised first);
- "actions" (B, h, 7) raw environment actions, normalised inside.
State and actions are normalised by quantiles (q01 → −1, q99 → +1; lerobot's QUANTILES mode for π0.5),
computed from the training data by `fit_stats` and saved in the checkpoint.

`forward(batch, weights)` is the weighted mean of PI05's per-sample flow-matching losses
(`PI05Policy.forward(reduction="none")`), the same contract as the object-token policy, so SFT and the
advantage-weighted update drive either backend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from coda_policy.checkpoint import Checkpointed, check_format
from coda_policy.dataset import ChunkData
from coda_policy.pi05.configuration_pi05 import Pi05Config
from coda_policy.pi05.data import samples
from coda_policy.pi05.gemma_adarms import install
from sim.episode import Episode, proprio
from sim.render import frames_at

install()
FORMAT = 1
IMAGE_KEY = "observation.images.{}"


def prompt(instruction: str, state01: np.ndarray) -> str:
    """π0.5's prompt for a normalised state (values in [−1, 1], 256 bins), as lerobot 0.4.4 writes it."""
    bins = np.digitize(state01, bins=np.linspace(-1, 1, 256 + 1)[:-1]) - 1
    text = instruction.strip().replace("_", " ").replace("\n", " ")
    return f"Task: {text}, State: {' '.join(map(str, bins.tolist()))};\nAction: "


@dataclasses.dataclass
class QuantileStats:
    """Per-dimension q01 / q99 of state and actions."""

    state: np.ndarray  # (2, state_dim)
    actions: np.ndarray  # (2, action_dim)

    @classmethod
    def fit(cls, state: np.ndarray, actions: np.ndarray) -> QuantileStats:
        q = (0.01, 0.99)
        flat = actions.reshape(-1, actions.shape[-1])
        return cls(np.quantile(state, q, axis=0), np.quantile(flat, q, axis=0))

    @classmethod
    def identity(cls, state_dim: int, action_dim: int) -> QuantileStats:
        return cls(np.stack([-np.ones(state_dim), np.ones(state_dim)]),
                   np.stack([-np.ones(action_dim), np.ones(action_dim)]))

    @staticmethod
    def _norm(x: Any, q: np.ndarray) -> Any:
        lo, hi = q[0], q[1]
        span = np.maximum(hi - lo, 1e-6)
        if isinstance(x, Tensor):
            lo = torch.as_tensor(lo, dtype=x.dtype, device=x.device)
            span = torch.as_tensor(span, dtype=x.dtype, device=x.device)
        return (x - lo) / span * 2 - 1

    @staticmethod
    def _denorm(x: Tensor, q: np.ndarray) -> Tensor:
        lo = torch.as_tensor(q[0], dtype=x.dtype, device=x.device)
        span = torch.as_tensor(np.maximum(q[1] - q[0], 1e-6), dtype=x.dtype, device=x.device)
        return (x + 1) / 2 * span + lo

    def to_json(self) -> dict[str, list]:
        return {"state": self.state.tolist(), "actions": self.actions.tolist()}

    @classmethod
    def from_json(cls, d: dict[str, list]) -> QuantileStats:
        return cls(np.asarray(d["state"], float), np.asarray(d["actions"], float))


class Pi05Policy(Checkpointed, nn.Module):
    """See the module docstring."""

    config_class = Pi05Config
    # the batch keys `forward` reads besides "actions" (coda_policy.sft and coda_policy.awr index by them)
    input_keys = ("images", "tokens", "token_mask")

    def __init__(self, config: Pi05Config, stats: QuantileStats | None = None) -> None:
        super().__init__()
        from lerobot.configs.types import FeatureType, PolicyFeature
        from lerobot.policies.pi05.configuration_pi05 import PI05Config
        from lerobot.policies.pi05.modeling_pi05 import PI05Policy

        from coda_policy.pi05.tiny import backbone, byte_tokenizer

        self.config = c = config
        self.tokenizer = self._tokenizer(c, byte_tokenizer)
        s = c.image_size
        visual = {IMAGE_KEY.format(cam): PolicyFeature(FeatureType.VISUAL, (3, s, s)) for cam in c.cameras}
        self.lerobot_config = PI05Config(
            device="cpu", dtype=c.dtype, image_resolution=(s, s), chunk_size=c.chunk, n_action_steps=c.chunk,
            max_state_dim=c.max_state_dim, max_action_dim=c.max_action_dim,
            num_inference_steps=c.inference_steps, tokenizer_max_length=c.tokenizer_max_length,
            input_features={**visual, "observation.state": PolicyFeature(FeatureType.STATE, (c.state_dim,))},
            output_features={"action": PolicyFeature(FeatureType.ACTION, (c.action_dim,))})
        if c.pretrained and not Path(c.pretrained).is_dir():
            raise FileNotFoundError(f"π0.5 checkpoint folder {c.pretrained} does not exist (read offline: a "
                                    "lerobot PI05 folder with config.json and model.safetensors)")
        with torch.random.fork_rng(), backbone(c.size, len(self.tokenizer)):
            torch.manual_seed(c.seed)
            if c.pretrained:
                self.model = PI05Policy.from_pretrained(c.pretrained, config=self.lerobot_config)
            else:
                self.model = PI05Policy(self.lerobot_config)
        self.stats = stats or QuantileStats.identity(c.state_dim, c.action_dim)
        self._gen = torch.Generator().manual_seed(c.seed)
        self._instruction = ""

    @staticmethod
    def _tokenizer(c: Pi05Config, byte_tokenizer: Any) -> Any:
        if not c.tokenizer:
            return byte_tokenizer()
        from transformers import AutoTokenizer

        if not Path(c.tokenizer).is_dir():
            raise FileNotFoundError(f"π0.5 tokenizer folder {c.tokenizer} does not exist (read offline: "
                                    "copy PaliGemma's tokenizer files there)")
        return AutoTokenizer.from_pretrained(c.tokenizer, local_files_only=True)

    # ---- data ------------------------------------------------------------------------------------
    def set_stats(self, stats: QuantileStats) -> None:
        self.stats = stats

    def fit_stats(self, state: np.ndarray, actions: np.ndarray) -> QuantileStats:
        self.stats = QuantileStats.fit(state, actions)
        return self.stats

    def tokenize(self, instructions: list[str], states: np.ndarray) -> tuple[Tensor, Tensor]:
        """(tokens, mask) of π0.5 prompts for raw states (normalised here)."""
        norm = np.clip(QuantileStats._norm(np.asarray(states, float), self.stats.state), -1, 1)
        pad = np.zeros((len(norm), self.config.max_state_dim))
        pad[:, : norm.shape[1]] = norm
        enc = self.tokenizer([prompt(t, s) for t, s in zip(instructions, pad, strict=True)],
                             max_length=self.config.tokenizer_max_length, padding="max_length",
                             truncation=True, return_tensors="pt")
        return enc["input_ids"], enc["attention_mask"].bool()

    def features(self, instructions: list[str], states: np.ndarray, images: np.ndarray,
                 actions: np.ndarray | None = None) -> dict[str, Tensor]:
        """A batch from raw arrays: images (B, n_cameras, S, S, 3) uint8, states (B, state_dim), actions
        (B, h, 7) or None."""
        images = np.asarray(images)
        s = self.config.image_size
        if images.shape[1:] != (len(self.config.cameras), s, s, 3):
            raise ValueError(f"images of shape {images.shape[1:]}; this policy takes "
                             f"({len(self.config.cameras)}, {s}, {s}, 3)")
        tokens, mask = self.tokenize(instructions, states)
        batch = {"images": torch.from_numpy(np.ascontiguousarray(images.transpose(0, 1, 4, 2, 3))),
                 "tokens": tokens, "token_mask": mask}
        if actions is not None:
            batch["actions"] = torch.as_tensor(np.asarray(actions), dtype=torch.float32)
        return batch

    def chunk_data(self, episodes: Sequence[Episode]) -> ChunkData:
        """Training samples of the successful `episodes` (one per recorded state, frames replayed) and the
        quantile statistics of their state and actions."""
        c = self.config
        s = samples(episodes, c.chunk, c.cameras, c.image_size)
        stats = QuantileStats.fit(s.states, s.actions)
        batch = self.features(s.instructions, s.states, s.images, s.actions)
        return ChunkData(batch, stats, len(set(s.episode.tolist())), len(s.actions))

    def state_inputs(self, episodes: Sequence[Episode], refs: Sequence[tuple[int, int]]) -> dict[str, Tensor]:
        """Inputs at recorded states `refs` = (episode index, state index): frames replayed per episode."""
        c = self.config
        images = np.zeros((len(refs), len(c.cameras), c.image_size, c.image_size, 3), np.uint8)
        by_episode: dict[int, list[int]] = {}
        for k, (e, _) in enumerate(refs):
            by_episode.setdefault(int(e), []).append(k)
        for e, rows in by_episode.items():
            ep = episodes[e]
            steps = [min(int(ep.state_steps[refs[k][1]]), ep.steps) for k in rows]
            images[rows] = frames_at(ep, steps, c.cameras, c.image_size)
        states = np.stack([proprio(episodes[e].states[i]) for e, i in refs])
        return self.features([episodes[e].scene.instruction for e, _ in refs], states, images)

    def normalize_actions(self, actions: Tensor) -> Tensor:
        return self.stats._norm(actions, self.stats.actions)

    @torch.no_grad()
    def encode(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """(prefix hidden states (B, T, width), prefix mask, their masked mean): the VLM's reading of
        images and prompt, which the chunk critic takes as its state features."""
        from lerobot.policies.pi05.modeling_pi05 import make_att_2d_masks

        m, lb = self.model.model, self._lerobot_batch(batch)
        images, img_masks = self.model._preprocess_images(lb)
        emb, pad, att = m.embed_prefix(images, img_masks, lb["observation.language.tokens"],
                                       lb["observation.language.attention_mask"])
        (out, _), _ = m.paligemma_with_expert.forward(
            attention_mask=m._prepare_attention_masks_4d(make_att_2d_masks(pad, att)),
            position_ids=torch.cumsum(pad, dim=1) - 1, past_key_values=None, inputs_embeds=[emb, None],
            use_cache=False)
        w = pad[..., None].to(out.dtype)
        return out, pad, ((out * w).sum(1) / w.sum(1).clamp_min(1.0)).float()

    def _lerobot_batch(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        dev = next(self.model.parameters()).device
        out = {IMAGE_KEY.format(cam): batch["images"][:, i].to(dev, torch.float32) / 255.0
               for i, cam in enumerate(self.config.cameras)}
        out["observation.language.tokens"] = batch["tokens"].to(dev)
        out["observation.language.attention_mask"] = batch["token_mask"].to(dev)
        if "actions" in batch:
            out["action"] = self.stats._norm(batch["actions"].to(dev, torch.float32), self.stats.actions)
        return out

    # ---- training --------------------------------------------------------------------------------
    def forward(self, batch: dict[str, Tensor],
                weights: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
        """The mean over samples of `weights * PI05's per-sample flow-matching loss` (weights default 1)."""
        per, _ = self.model.forward(self._lerobot_batch(batch), reduction="none")
        w = torch.ones_like(per) if weights is None else weights.to(per).reshape(per.shape)
        loss = (w * per).mean()
        return loss, {"loss": float(loss.detach()), "flow_mse": float(per.detach().mean()),
                      "weight_mean": float(w.mean()), "weight_max": float(w.max())}

    # ---- inference -------------------------------------------------------------------------------
    @torch.no_grad()
    def sample_actions(self, batch: dict[str, Tensor], noise: Tensor | None = None) -> Tensor:
        """Raw action chunks (B, h, 7) in [−1, 1]; noise drawn from the policy's generator unless given."""
        c = self.config
        lb = self._lerobot_batch(batch)
        B = lb["observation.language.tokens"].shape[0]
        if noise is None:
            noise = torch.randn(B, c.chunk, c.max_action_dim, generator=self._gen)
        was = self.model.training
        self.model.eval()
        images, img_masks = self.model._preprocess_images(lb)
        x = self.model.model.sample_actions(images, img_masks, lb["observation.language.tokens"],
                                            lb["observation.language.attention_mask"],
                                            noise=noise.to(images[0].device))
        self.model.train(was)
        return self.stats._denorm(x[:, :, : c.action_dim].float(), self.stats.actions).clamp(-1.0, 1.0)

    def reset(self, scene: Any = None) -> None:
        """Start an episode: remember its instruction and reseed the sampling noise."""
        self._instruction = getattr(scene, "instruction", "") if scene is not None else ""
        self._gen = torch.Generator().manual_seed(self.config.seed)

    def observation_features(self, obs: Any) -> dict[str, Tensor]:
        missing = [c for c in self.config.cameras if c not in obs.images]
        if missing:
            raise ValueError(f"the observation has no {missing} image(s); run episodes through "
                             "sim.episode.run_episode, which renders a policy's `cameras`")
        images = np.stack([obs.images[c] for c in self.config.cameras])[None]
        return self.features([obs.instruction or self._instruction], obs.proprio[None], images)

    def select_action(self, obs: Any) -> np.ndarray:
        """One chunk (config.execute, 7), executed open loop."""
        chunk = self.sample_actions(self.observation_features(obs))[0]
        return chunk[: self.config.execute].cpu().numpy().astype(np.float64)

    def bind(self, scene: Any) -> Any:
        """`reset(scene)`, then a `sim.episode` policy that asks the runner for this policy's cameras."""
        self.reset(scene)
        return CameraPolicy(self.select_action, self.config.cameras, self.config.image_size)

    # ---- persistence -----------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any]:
        """Config, quantile statistics (JSON) and PI05's weights: what `save` writes to one .safetensors
        file."""
        return {"format": FORMAT, "config": dataclasses.asdict(self.config), "stats": self.stats.to_json(),
                "state_dict": {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}}

    @classmethod
    def from_checkpoint(cls, ckpt: dict[str, Any]) -> Pi05Policy:
        check_format(ckpt, FORMAT)
        cfg = dict(ckpt["config"], cameras=tuple(ckpt["config"]["cameras"]), pretrained="")
        policy = cls(cls.config_class(**cfg), QuantileStats.from_json(ckpt["stats"]))
        policy.model.load_state_dict(ckpt["state_dict"])
        return policy.eval()


@dataclasses.dataclass
class CameraPolicy:
    """A `sim.episode` policy that declares the frames it needs; the runner fills `obs.images`."""

    act: Any
    cameras: tuple[str, ...]
    image_size: int

    def __call__(self, obs: Any) -> np.ndarray:
        return self.act(obs)
