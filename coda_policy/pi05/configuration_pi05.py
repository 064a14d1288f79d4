"""Configuration of the π0.5 backend (registered as "pi05"; the model: `modeling_pi05` beside it).

Importing this module needs nothing beyond the default install; building the policy needs lerobot, which
lives in the optional environment `make setup-pi05` makes (.venv-pi05; docs/pi05.md)."""

from __future__ import annotations

from dataclasses import dataclass

from coda_policy.registry import NAMED, register_config
from coda_policy.threads import TRAIN_THREADS


@register_config("pi05")
@dataclass(frozen=True, kw_only=True)
class Pi05Config:
    """lerobot's PI05 behind our policy verbs. `size="tiny"` is a random-init CPU model that proves the
    plumbing; `size="full"` is π0.5's architecture, loaded from `pretrained` when given."""

    type: str = "pi05"
    # "tiny" (≈0.15 M parameters, CPU) or "full" (PaliGemma 2B + 300M action expert)
    size: str = "tiny"
    # a local lerobot PI05 checkpoint directory (config.json + model.safetensors); "" = random init
    pretrained: str = ""
    # a local PaliGemma tokenizer directory; "" = the built-in byte tokenizer (tiny only: its vocabulary
    # is not PaliGemma's, so a pretrained backbone needs the real one)
    tokenizer: str = ""
    # cameras rendered for the policy, each square at image_size pixels (π0.5: 224)
    cameras: tuple[str, ...] = ("front", "wrist")
    image_size: int = 32
    # action chunk length h and how many steps select_action returns before re-planning
    chunk: int = 8
    execute: int = 8
    action_dim: int = 7
    # proprio: ee position (3), rotation (6), gripper (1) — padded to max_state_dim inside PI05
    state_dim: int = 10
    max_state_dim: int = 32
    max_action_dim: int = 32
    # prompt tokens ("Task: …, State: <bins>;\nAction: "); the byte tokenizer needs ~1 per character
    tokenizer_max_length: int = 200
    # flow-matching integration steps at inference
    inference_steps: int = 10
    # "float32" or "bfloat16" (GPU)
    dtype: str = "float32"
    lr: float = 2.5e-5
    weight_decay: float = 0.01
    batch_size: int = 32
    seed: int = 0
    torch_threads: int = TRAIN_THREADS

    def __post_init__(self) -> None:
        if self.size not in ("tiny", "full"):
            raise ValueError(f"size must be 'tiny' or 'full', got {self.size!r}")
        if self.size == "full" and self.pretrained and not self.tokenizer:
            raise ValueError("a pretrained π0.5 needs its PaliGemma tokenizer: set tokenizer= to a folder")
        if not 1 <= self.execute <= self.chunk:
            raise ValueError(f"execute={self.execute} must be in [1, chunk={self.chunk}]")
        if not self.cameras:
            raise ValueError("π0.5 needs at least one camera")
        if self.image_size < 8:
            raise ValueError(f"image_size must be >= 8, got {self.image_size}")


# the CPU configuration of the registry tests and `--policy pi05_tiny`
PI05_TINY = Pi05Config(size="tiny", image_size=32, chunk=8, execute=4, max_state_dim=16, max_action_dim=8,
                       tokenizer_max_length=160, inference_steps=4, lr=1e-3, batch_size=16)
NAMED.register("pi05_tiny", PI05_TINY)
