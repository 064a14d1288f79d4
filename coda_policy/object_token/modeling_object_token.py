"""`ObjectTokenPolicy`: robot, instruction and object tokens → a transformer encoder → a flow-matching action
expert whose h action tokens attend to the encoder's tokens and predict the velocity of a rectified flow
from noise (t = 0) to the normalised action chunk (t = 1).

Batches are dicts of tensors as `features.collate` makes them; "actions" (B, h, 7) are raw environment
actions in [-1, 1] and are normalised inside with the policy's own statistics.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from coda_policy.checkpoint import Checkpointed, check_format
from coda_policy.dataset import ChunkData, ChunkDataset, goal_token
from coda_policy.device import module_device, to_device
from coda_policy.object_token.configuration_object_token import ObjectTokenConfig
from coda_policy.object_token.features import ROBOT_DIM, collate, featurize, obj_dim
from coda_policy.object_token.normalize import Normalizer, NormStats
from common.text import DIM as TEXT_DIM
from common.text import TextEmbedder, default_embedder

if TYPE_CHECKING:
    from sim.episode import Episode, Observation
    from sim.scene import SceneSpec

FORMAT = 1  # checkpoint layout version


def _mlp(d_in: int, d: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d), nn.GELU(), nn.Linear(d, d))


def _time_embedding(t: Tensor, d: int) -> Tensor:
    half = d // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    ang = t[:, None] * 1000.0 * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=-1)


class ObjectTokenPolicy(Checkpointed, nn.Module):
    """The default policy backend. See the module docstring for the data it speaks."""

    config_class = ObjectTokenConfig
    # the batch keys `forward` reads besides "actions" (coda_policy.sft and coda_policy.awr index by them)
    input_keys = ("robot", "objects", "object_mask", "text")

    def __init__(self, config: ObjectTokenConfig, stats: NormStats | None = None) -> None:
        super().__init__()
        self.config = c = config
        self.embedder: TextEmbedder = default_embedder()
        with torch.random.fork_rng():
            torch.manual_seed(c.seed)
            self._build(c)
        self.normalizer = Normalizer(stats or NormStats.identity(c.action_dim, c.grounding))
        self._scene: SceneSpec | None = None
        self._gen = torch.Generator().manual_seed(c.seed)

    def _build(self, c: ObjectTokenConfig) -> None:
        d = c.d_model

        def layer(cls: type) -> nn.Module:
            return cls(
                d, c.n_heads, c.ff_mult * d, c.dropout, activation="gelu", batch_first=True, norm_first=True
            )

        self.robot_in, self.obj_in = _mlp(ROBOT_DIM, d), _mlp(obj_dim(c.grounding), d)
        self.text_in = nn.Linear(TEXT_DIM, d)
        self.type_emb = nn.Embedding(4, d)  # readout, robot, text, object
        self.readout = nn.Parameter(torch.zeros(1, 1, d))
        self.encoder = nn.TransformerEncoder(
            layer(nn.TransformerEncoderLayer), c.n_layers, enable_nested_tensor=False
        )
        self.enc_norm = nn.LayerNorm(d)
        self.act_in = nn.Linear(c.action_dim, d)
        self.act_pos = nn.Parameter(torch.randn(1, c.chunk, d) * 0.02)
        self.time_in = _mlp(d, d)
        self.cond_in = nn.Linear(d, d)
        self.decoder = nn.TransformerDecoder(layer(nn.TransformerDecoderLayer), c.n_decoder_layers)
        self.dec_norm = nn.LayerNorm(d)
        self.act_out = nn.Linear(d, c.action_dim)
        if c.target_loss > 0:  # which object token the goal names (a training signal only)
            self.target_head = nn.Linear(d, 1)

    # ---- encoder ---------------------------------------------------------------------------------
    def encode(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """(tokens (B, T, d), mask (B, T) True = real token, pooled (B, d) = the readout token)."""
        nz = self.normalizer
        robot = self.robot_in(nz.norm("robot", batch["robot"]))[:, None]
        text = self.text_in(batch["text"])[:, None]
        objs = self.obj_in(nz.norm("objects", batch["objects"]))
        B, n_obj = objs.shape[:2]
        if n_obj > self.config.max_objects:
            raise ValueError(f"{n_obj} object tokens exceed max_objects={self.config.max_objects}")
        types = self.type_emb.weight
        tokens = torch.cat(
            [self.readout.expand(B, -1, -1) + types[0], robot + types[1], text + types[2], objs + types[3]],
            dim=1,
        )
        ones = torch.ones(B, 3, dtype=torch.bool, device=objs.device)
        mask = torch.cat([ones, batch["object_mask"].bool()], dim=1)
        tokens = self.enc_norm(self.encoder(tokens, src_key_padding_mask=~mask))
        return tokens, mask, tokens[:, 0]

    def velocity(self, x: Tensor, t: Tensor, tokens: Tensor, mask: Tensor, pooled: Tensor) -> Tensor:
        """Predicted flow velocity at noisy normalised chunk `x` (B, h, 7) and time `t` (B,)."""
        cond = self.time_in(_time_embedding(t, self.config.d_model)) + self.cond_in(pooled)
        h = self.act_in(x) + self.act_pos + cond[:, None]
        h = self.decoder(h, tokens, memory_key_padding_mask=~mask)
        return self.act_out(self.dec_norm(h))

    # ---- training --------------------------------------------------------------------------------
    def forward(
        self, batch: dict[str, Tensor], weights: Tensor | None = None
    ) -> tuple[Tensor, dict[str, float]]:
        """Flow-matching loss on batch["actions"] (B, h, 7) (raw; normalised here): the mean over samples of
        `weights * per-sample loss` (weights default to 1)."""
        a = self.normalizer.norm("actions", batch["actions"])
        B = a.shape[0]
        tokens, mask, pooled = self.encode(batch)
        noise = torch.randn_like(a)
        t = torch.rand(B, device=a.device)
        x = (1 - t[:, None, None]) * noise + t[:, None, None] * a
        per = ((self.velocity(x, t, tokens, mask, pooled) - (a - noise)) ** 2).mean(dim=(1, 2))
        w = torch.ones_like(per) if weights is None else weights.to(per).reshape(B)
        loss = (w * per).mean()
        metrics = {
            "flow_mse": float(per.detach().mean()),
            "weight_mean": float(w.mean()),
            "weight_max": float(w.max()),
        }
        if self.config.target_loss > 0 and "target" in batch:
            loss = loss + self._target_loss(tokens, mask, batch["target"], metrics)
        metrics["loss"] = float(loss.detach())
        return loss, metrics

    def _target_loss(self, tokens: Tensor, mask: Tensor, target: Tensor, metrics: dict[str, float]) -> Tensor:
        """`target_loss` × cross-entropy of the goal's object token over the real object tokens (samples
        whose goal names no object token, target -1, are left out)."""
        logits = self.target_logits(tokens, mask)
        target = target.long().reshape(-1)
        known = target >= 0
        if not bool(known.any()):
            return tokens.new_zeros(())
        ce = F.cross_entropy(logits[known], target[known])
        metrics["target_ce"] = float(ce.detach())
        metrics["target_acc"] = float((logits[known].argmax(-1) == target[known]).float().mean())
        return self.config.target_loss * ce

    def target_logits(self, tokens: Tensor, mask: Tensor) -> Tensor:
        """(B, n) the target head's logit per token after the readout, robot and text ones (−inf where
        padded): which object token the policy takes the goal to name (needs `target_loss` > 0)."""
        if not hasattr(self, "target_head"):
            raise ValueError("this policy was trained without target_loss: it has no target head")
        return self.target_head(tokens[:, 3:]).squeeze(-1).masked_fill(~mask[:, 3:], float("-inf"))

    # ---- inference -------------------------------------------------------------------------------
    @torch.no_grad()
    def sample_actions(
        self,
        batch: dict[str, Tensor],
        n_steps: int | None = None,
        noise: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Integrate the flow (Euler, `n_steps` or config.flow_steps) → raw chunks (B, h, 7) in [-1, 1]."""
        c = self.config
        tokens, mask, pooled = self.encode(batch)
        B = tokens.shape[0]
        if noise is None:  # drawn on the CPU: one seed, one initial noise on every device
            noise = torch.randn(B, c.chunk, c.action_dim, generator=generator) * c.noise_scale
        x, n = noise.to(tokens.device).clone(), n_steps or c.flow_steps
        for i in range(n):
            t = torch.full((B,), i / n, device=tokens.device)
            x = x + self.velocity(x, t, tokens, mask, pooled) / n
        return self.normalizer.denorm("actions", x).clamp(-1.0, 1.0)

    def reset(self, scene: SceneSpec | None = None) -> None:
        """Start an episode: remember its scene (colours, category words) and reseed the sampling noise."""
        self._scene = scene
        self._gen = torch.Generator().manual_seed(self.config.seed)

    def _chunks(self, feats: list[dict[str, np.ndarray]], noise: Tensor | None = None,
                generator: torch.Generator | None = None) -> list[np.ndarray]:
        """The chunks to execute (config.execute, 7) for featurised observations, sampled in eval mode."""
        was_training = self.training
        self.eval()
        chunks = self.sample_actions(to_device(collate(feats), module_device(self)), noise=noise,
                                     generator=generator)
        self.train(was_training)
        return [ch[: self.config.execute].cpu().numpy().astype(np.float64) for ch in chunks]

    def select_action(self, obs: Observation) -> np.ndarray:
        """One action chunk (config.execute, 7) for an observation, to be executed open loop."""
        feats = featurize(obs, spec=self._scene, embedder=self.embedder, grounding=self.config.grounding)
        return self._chunks([feats], generator=self._gen)[0]

    def bind(self, scene: SceneSpec) -> Any:
        """`reset(scene)` and return `select_action`, i.e. a `sim.episode.Policy` for that scene."""
        self.reset(scene)
        return self.select_action

    def bind_batch(self, scenes: Sequence[SceneSpec]) -> Any:
        """A `sim.episode.BatchPolicy` for an episode in each of `scenes` at once: each episode's sampling
        noise is drawn from its own generator, seeded as `reset` seeds one, so an episode is given the
        chunks `bind(scene)` would give it up to float rounding (one forward pass for the batch)."""
        gens = [torch.Generator().manual_seed(self.config.seed) for _ in scenes]
        c = self.config

        def act(observations: Sequence[Observation], which: Sequence[int]) -> list[np.ndarray]:
            feats = [featurize(o, spec=scenes[i], embedder=self.embedder, grounding=c.grounding)
                     for o, i in zip(observations, which, strict=True)]
            noise = torch.cat([torch.randn(1, c.chunk, c.action_dim, generator=gens[i]) * c.noise_scale
                               for i in which])
            return self._chunks(feats, noise=noise)

        return act

    # ---- data (what the trainers ask of every backend) --------------------------------------------
    def chunk_data(self, episodes: Sequence[Episode]) -> ChunkData:
        """Training chunks of the successful `episodes` (one per recorded state) with their statistics."""
        ds = ChunkDataset(episodes, self.config.chunk, only_success=True, embedder=self.embedder,
                          grounding=self.config.grounding, targets=self.config.target_loss > 0)
        if not len(ds):
            raise ValueError(f"no successful demonstration among {len(episodes)} episodes")
        return ChunkData(ds.tensors(), ds.stats(), len(ds.episodes), len(ds))

    def state_inputs(self, episodes: Sequence[Episode], refs: Sequence[tuple[int, int]]) -> dict[str, Tensor]:
        """Inputs at recorded states `refs` = (episode index, state index); a state named twice is
        featurised once. With `target_loss` on, each state also carries its "target" label (`goal_token`):
        which item the goal names is a fact of the scene, so rollouts label it as demonstrations do."""
        cache: dict[tuple[int, int], dict[str, np.ndarray]] = {}
        for e, i in refs:
            if (e, i) not in cache:
                ep = episodes[e]
                cache[(e, i)] = featurize(ep.states[i], ep.scene.instruction, ep.scene, self.embedder,
                                          self.config.grounding)
                if self.config.target_loss > 0:
                    cache[(e, i)]["target"] = np.int64(goal_token(ep.states[i], ep.scene))
        return collate([cache[(int(e), int(i))] for e, i in refs])

    def normalize_actions(self, actions: Tensor) -> Tensor:
        return self.normalizer.norm("actions", actions)

    def set_stats(self, stats: NormStats) -> None:
        self.normalizer.set(stats)

    def checkpoint(self) -> dict[str, Any]:
        """Config, weights and normalisation statistics (buffers): what `save` writes to one .safetensors
        file."""
        return {
            "format": FORMAT,
            "config": dataclasses.asdict(self.config),
            # CPU tensors whatever the device: a checkpoint loads anywhere (`coda_policy.device`)
            "state_dict": {k: v.detach().cpu().clone() for k, v in self.state_dict().items()},
        }

    @classmethod
    def from_checkpoint(cls, ckpt: dict[str, Any]) -> ObjectTokenPolicy:
        check_format(ckpt, FORMAT)
        policy = cls(cls.config_class(**ckpt["config"]))
        policy.load_state_dict(ckpt["state_dict"])
        return policy.eval()
