"""`ChunkDataset`: (features at t, action chunk actions[t:t+h]) pairs from recorded episodes.

Every recorded state before the last action starts a chunk. The chunk is padded by repeating the episode's
last action. For the critic each item also says where the chunk ends: the recorded state at (or first
after) step t+h, whether the episode ends inside the chunk (`done`) and whether the episode succeeded;
`with_next=True` adds that end state's features under "next_*". `refs[k]` locates item k in `episodes`
so that potentials can be evaluated on the `WorldState`s themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import Dataset

from coda_policy.object_token.features import collate, featurize, token_names
from coda_policy.object_token.normalize import NormStats
from common.text import TextEmbedder, default_embedder
from sim.episode import Episode
from sim.world import WorldState

if TYPE_CHECKING:
    from sim.scene import SceneSpec


@dataclass(frozen=True)
class ChunkRef:
    """Where one chunk sits: episode index, start (state index i, step t), end (state index j, step
    t_next), whether the episode ends inside the chunk, and the episode's success."""

    episode: int
    i: int
    t: int
    j: int
    t_next: int
    done: bool
    success: bool


@dataclass
class ChunkData:
    """What a backend's `chunk_data(episodes)` gives the trainers: the whole training set as tensors (its
    keys: the policy's `input_keys` and "actions"), normalisation statistics of that data (the backend's
    own kind), and how many episodes and chunks it holds."""

    tensors: dict[str, torch.Tensor]
    stats: Any
    episodes: int
    chunks: int


def batch_keys(policy: Any, data: Mapping[str, Any]) -> tuple[str, ...]:
    """What a training step feeds the policy: its acting inputs, the actions, and the auxiliary labels
    ("target", `goal_token`) where the data carries them — one list for SFT and the weighted update."""
    return (*policy.input_keys, "actions", *(["target"] if "target" in data else []))


def goal_token(state: WorldState, spec: SceneSpec) -> int:
    """Index among the state's tokens (`featurize`'s order) of the object the scene's first goal predicate
    is about, or -1 when that is no object token (a region or handle, say)."""
    subject = str(spec.goal[0].args[0])
    names = [n for n, kind in token_names(state) if kind == "object"]
    return names.index(subject) if subject in names else -1


def episode_paths(root: str | Path) -> list[Path]:
    """Episode files under `root`: a run directory (its `episodes/**`), an episodes folder, or one .npz."""
    root = Path(root)
    if root.is_file():
        return [root]
    base = root / "episodes" if (root / "episodes").is_dir() else root
    return sorted(base.rglob("*.npz"))


def load_episodes(root: str | Path) -> list[Episode]:
    paths = episode_paths(root)
    if not paths:
        raise FileNotFoundError(f"no episodes (*.npz) under {root}")
    return [Episode.load(p) for p in paths]


class ChunkDataset(Dataset):
    """Chunks of length `chunk` from `episodes`; features are computed once, up front."""

    def __init__(
        self,
        episodes: Sequence[Episode],
        chunk: int = 8,
        *,
        with_next: bool = False,
        only_success: bool = False,
        embedder: TextEmbedder | None = None,
        grounding: bool = False,
        targets: bool = False,
    ) -> None:
        self.chunk, self.with_next = chunk, with_next
        self.episodes = [e for e in episodes if e.success or not only_success]
        emb = embedder or default_embedder()
        self.features: list[list[dict[str, np.ndarray]]] = [
            [featurize(s, ep.scene.instruction, ep.scene, emb, grounding) for s in ep.states]
            for ep in self.episodes
        ]
        if targets:  # each state's label for the policy's auxiliary target loss
            for ep, feats in zip(self.episodes, self.features, strict=True):
                for s, f in zip(ep.states, feats, strict=True):
                    f["target"] = np.int64(goal_token(s, ep.scene))
        self.refs = [r for e, ep in enumerate(self.episodes) for r in self._refs(e, ep)]

    @classmethod
    def from_dir(cls, root: str | Path, chunk: int = 8, **kw: Any) -> ChunkDataset:
        """Every episode under a run directory (`episodes/**/*.npz`) or an episodes folder."""
        return cls(load_episodes(root), chunk, **kw)

    def _refs(self, e: int, ep: Episode) -> Iterator[ChunkRef]:
        T, steps = ep.steps, np.asarray(ep.state_steps)
        for i, t in enumerate(steps.tolist()):
            if t >= T:
                break
            t_end = min(t + self.chunk, T)
            j = int(np.searchsorted(steps, t_end))
            j = min(j, len(steps) - 1)
            yield ChunkRef(e, i, t, j, int(steps[j]), t + self.chunk >= T, bool(ep.success))

    def __len__(self) -> int:
        return len(self.refs)

    def actions(self, r: ChunkRef) -> np.ndarray:
        acts = self.episodes[r.episode].actions
        idx = np.minimum(np.arange(r.t, r.t + self.chunk), len(acts) - 1)
        return acts[idx].astype(np.float32)

    def __getitem__(self, k: int) -> dict[str, Any]:
        r = self.refs[k]
        item: dict[str, Any] = dict(self.features[r.episode][r.i])
        item.update(
            actions=self.actions(r),
            t=np.int64(r.t),
            t_next=np.int64(r.t_next),
            done=np.bool_(r.done),
            success=np.bool_(r.success),
            episode=np.int64(r.episode),
        )
        if self.with_next:
            nxt = self.features[r.episode][r.j]
            item.update(
                next_robot=nxt["robot"],
                next_objects=nxt["objects"],
                next_object_mask=nxt["object_mask"],
                next_text=nxt["text"],
            )
        return item

    def state(self, k: int) -> WorldState:
        """The `WorldState` where chunk k starts."""
        r = self.refs[k]
        return self.episodes[r.episode].states[r.i]

    def next_state(self, k: int) -> WorldState:
        """The `WorldState` where chunk k ends (step t_next)."""
        r = self.refs[k]
        return self.episodes[r.episode].states[r.j]

    def batch(self, indices: Sequence[int]) -> dict[str, torch.Tensor]:
        """Items `indices`, collated (next_objects padded too when present)."""
        items = [self[int(k)] for k in indices]
        out = collate(items)
        if self.with_next:
            nxt = collate(
                [{"objects": it["next_objects"], "object_mask": it["next_object_mask"]} for it in items]
            )
            out["next_objects"], out["next_object_mask"] = nxt["objects"], nxt["object_mask"]
        return out

    def tensors(self) -> dict[str, torch.Tensor]:
        """The whole dataset as one padded batch (fast random minibatches by indexing)."""
        return self.batch(range(len(self)))

    def stats(self) -> NormStats:
        """Normalisation statistics of this data (object rows: real tokens only)."""
        feats = [f for ep in self.features for f in ep]
        robot = np.stack([f["robot"] for f in feats])
        objects = np.concatenate([f["objects"][f["object_mask"]] for f in feats])
        actions = np.concatenate([ep.actions for ep in self.episodes])
        return NormStats.compute(robot, objects, actions)
