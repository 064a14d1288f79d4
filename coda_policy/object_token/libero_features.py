"""Our object-token policy in a LIBERO environment (`sim.libero.env.LiberoEnv`): a timestep as the policy's
features, and `LiberoPolicy`, a saved policy acting there.

A LIBERO state is read as our `WorldState` (`sim.libero.world.LiberoReader`) and featurised by
`coda_policy.object_token.features.featurize`, the one feature function: the protocol's evaluator, the
standalone SFT and the loop's LIBERO episodes (`--preset libero`) all give a policy the same features, so a
checkpoint trained by any of them acts under any other. Object colours are not in LIBERO's state (zeros);
category words come from the instance names ("alphabet_soup_1" → "alphabet soup").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from coda_policy.object_token.features import collate, featurize

if TYPE_CHECKING:
    from common.text import TextEmbedder
    from sim.libero.env import LiberoEnv
    from sim.libero.world import LiberoReader


def reader(env: LiberoEnv) -> LiberoReader:
    """A reader of the environment's states; make it after each reset (its layout is the reset's)."""
    from sim.libero.world import LiberoReader

    return LiberoReader(env)


def featurize_libero(read: LiberoReader, instruction: str, embedder: TextEmbedder,
                     grounding: bool = False) -> dict[str, np.ndarray]:
    """The features of the current state of the reader's environment."""
    return featurize(read.read(), instruction, None, embedder, grounding)


class LiberoPolicy:
    """A saved policy acting in a LIBERO environment: one chunk of LIBERO actions per plan, its first
    `execute` actions run open loop (default: the policy's own `execute`)."""

    def __init__(self, path: str | Path, env: LiberoEnv, instruction: str,
                 execute: int | None = None) -> None:
        import torch

        from coda_policy.registry import load_policy
        from common.text import default_embedder

        torch.set_num_threads(1)
        self.policy: Any = load_policy(path)
        self.env, self.instruction = env, instruction
        self.execute = execute or self.policy.config.execute
        self.embedder = default_embedder()
        self.read: LiberoReader | None = None
        self.queue: list[np.ndarray] = []
        self.gen = torch.Generator().manual_seed(0)

    def reset(self, seed: int) -> None:
        """A new episode, after the environment's reset: its state read afresh, the plan dropped, the
        sampling noise reseeded."""
        import torch

        self.read = reader(self.env)
        self.queue, self.gen = [], torch.Generator().manual_seed(seed)

    def chunk(self, seed: int | None = None) -> np.ndarray:
        """The policy's chunk for the current state (`seed`: fresh noise, else the episode's stream)."""
        import torch

        if self.read is None:
            raise RuntimeError("LiberoPolicy.reset(seed) must follow the environment's reset")
        gen = torch.Generator().manual_seed(seed) if seed is not None else self.gen
        feats = featurize_libero(self.read, self.instruction, self.embedder, self.policy.config.grounding)
        return self.policy.sample_actions(collate([feats]), generator=gen)[0].numpy().astype(np.float64)

    def act(self) -> np.ndarray:
        if not self.queue:
            self.queue = list(self.chunk()[: self.execute])
        return self.queue.pop(0)
