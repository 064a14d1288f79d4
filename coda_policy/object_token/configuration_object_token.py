"""Configuration of the default policy backend, `ObjectTokenPolicy` (registered as "object_token")."""

from __future__ import annotations

from dataclasses import dataclass

from coda_policy.registry import NAMED, register_config
from coda_policy.threads import TRAIN_THREADS


@register_config("object_token")
@dataclass(frozen=True, kw_only=True)
class ObjectTokenConfig:
    """A small language-conditioned, action-chunking, flow-matching policy over object tokens."""

    # registry name of the backend this config builds (`make_policy` dispatches on it)
    type: str = "object_token"
    # width of every token and of the action expert
    d_model: int = 128
    # transformer encoder layers over robot, instruction and object tokens
    n_layers: int = 3
    # action-expert (decoder) layers: action tokens attend to the encoder's tokens
    n_decoder_layers: int = 2
    # attention heads (must divide d_model)
    n_heads: int = 4
    # feed-forward width as a multiple of d_model
    ff_mult: int = 2
    # dropout inside the transformers (0 keeps sampling exactly reproducible in train mode too)
    dropout: float = 0.0
    # action chunk length h (steps predicted per call)
    chunk: int = 8
    # how many steps of a chunk `select_action` returns before re-planning (<= chunk)
    execute: int = 8
    # action dimension (Δpos 3, Δrot 3, gripper 1)
    action_dim: int = 7
    # give each object token the instruction ↔ category-words cosine (`object_token.features`): which
    # token the words name, from language alone. Off by default and in every preset: on LIBERO-Object's
    # development scenes it did not help at 100 demonstrations (FINDINGS #35). A checkpoint saved without
    # it loads with it off
    grounding: bool = False
    # weight of an auxiliary loss during training: from the encoder's object tokens, a linear head names
    # the token of the item the scene's goal is about (cross-entropy against the goal's first argument;
    # `ChunkDataset(targets=True)`). Nothing at acting time reads it: it asks the encoder to carry which
    # token the words name, which flow matching alone did not teach on LIBERO-Object (FINDINGS #39).
    # 0 = off (no head; checkpoints without it load unchanged)
    target_loss: float = 0.0
    # most object / fixture tokens a scene may have (`encode` raises beyond it)
    max_objects: int = 16
    # Euler integration steps of the flow when sampling
    flow_steps: int = 10
    # scale of the initial noise at sampling time (1 = the trained prior; < 1 is "low temperature")
    noise_scale: float = 1.0
    # AdamW learning rate (peak, after warm-up)
    lr: float = 1e-3
    # AdamW weight decay
    weight_decay: float = 1e-4
    # samples per optimiser step
    batch_size: int = 128
    # seed of parameter init and of `select_action`'s noise
    seed: int = 0
    # torch intra-op threads for training in the main process — the one setting for that role (pool
    # workers use `coda_policy.threads.WORKER_THREADS`). 1, not 2: on shared, oversubscribed cores two
    # OpenMP threads measured 10x slower than one (they spin at every barrier)
    torch_threads: int = TRAIN_THREADS

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "chunk", "flow_steps", "batch_size", "max_objects"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}")
        if not 1 <= self.execute <= self.chunk:
            raise ValueError(f"execute={self.execute} must be in [1, chunk={self.chunk}]")
        if self.target_loss < 0:
            raise ValueError(f"target_loss must be >= 0, got {self.target_loss}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


NAMED.register("object_token", ObjectTokenConfig())
