"""Our object-token policy in a LIBERO environment (`sim.libero.env.LiberoEnv`): a timestep as the policy's
features (`coda_policy.features` layout), from privileged state, and `LiberoPolicy`, a saved policy acting
there — the policy that acts in our MuJoCo world reads LIBERO's the same way.

- robot: end-effector position, rotation (first two columns of its matrix), gripper opening / 8 cm;
- one "object" token per movable object (position, position − hand, half extents of its collision box,
  rotation, no colour, grasped, category words from the BDDL's object category);
- one "region" token for the goal's target when it is a region (a basket's inside, a stove's cook region):
  its site position and a 5 cm half extent;
- the instruction's embedding.

"Grasped" is read from geometry (the fingers closed on something within 6 cm of the hand's grip point, the
object off its support); our world reads contacts. Object colours are not in LIBERO's state: zeros.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from coda_policy.features import GRIPPER_MAX, KINDS, OBJ_DIM, _rot6, category_codes, collate

if TYPE_CHECKING:
    from common.text import TextEmbedder
    from sim.libero.env import LiberoEnv


def _quat_xyzw_to_mat(q: np.ndarray) -> np.ndarray:
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def categories(env: LiberoEnv) -> dict[str, str]:
    """Object instance → its BDDL category in words ("akita_black_bowl_1" → "akita black bowl")."""
    return {n: cat.replace("_", " ") for n, cat in env.categories().items()}


def featurize_libero(env: LiberoEnv, instruction: str, embedder: TextEmbedder,
                     cats: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """The features of the environment's current state."""
    obs = env.obs
    ee = np.asarray(obs["robot0_eef_pos"], dtype=float)
    width = env.gripper_width
    robot = np.concatenate([ee, _rot6(_quat_xyzw_to_mat(obs["robot0_eef_quat"])), [width / GRIPPER_MAX]])
    cats = cats if cats is not None else categories(env)
    rows, words = [], []
    for n in (n for n in env.object_names if n in cats):
        b = env.box(n)
        pos = b.center
        grasped = width < 0.075 and float(np.linalg.norm(pos - ee)) < 0.06 and b.lo[2] > ee[2] - 0.2
        rows.append((KINDS.index("object"), pos, b.size / 2, _rot6(env.rotation(n)), float(grasped)))
        words.append(cats[n])
    goal = env.goal[0] if env.goal else []
    if len(goal) == 3 and not env.is_object(goal[2]) and env.has_site(goal[2]):
        rows.append((KINDS.index("region"), env.site_pos(goal[2]), np.full(3, 0.05), _rot6(np.eye(3)), 0.0))
        words.append(goal[2].replace("_", " "))
    objects = np.zeros((len(rows), OBJ_DIM), np.float32)
    codes = category_codes(words, embedder) if words else np.zeros((0, 0))
    for i, (kind, pos, half, rot, grasped) in enumerate(rows):
        objects[i] = np.concatenate([np.eye(len(KINDS))[kind], pos, pos - ee, half, rot, np.zeros(4),
                                     [grasped, 0.0], codes[i]])
    return {"robot": robot.astype(np.float32), "objects": objects,
            "object_mask": np.ones(len(objects), bool), "text": embedder.embed(instruction)}


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
        self.cats = categories(env)
        self.queue: list[np.ndarray] = []
        self.gen = torch.Generator().manual_seed(0)

    def reset(self, seed: int) -> None:
        """A new episode: the plan dropped, the sampling noise reseeded."""
        import torch

        self.queue, self.gen = [], torch.Generator().manual_seed(seed)

    def chunk(self, seed: int | None = None) -> np.ndarray:
        """The policy's chunk for the current state (`seed`: fresh noise, else the episode's stream)."""
        import torch

        gen = torch.Generator().manual_seed(seed) if seed is not None else self.gen
        feats = featurize_libero(self.env, self.instruction, self.embedder, self.cats)
        return self.policy.sample_actions(collate([feats]), generator=gen)[0].numpy().astype(np.float64)

    def act(self) -> np.ndarray:
        if not self.queue:
            self.queue = list(self.chunk()[: self.execute])
        return self.queue.pop(0)
