"""Features of one timestep for the object-token policy.

`featurize(obs_or_state, ...)` gives a dict of numpy arrays:
  "robot" (ROBOT_DIM,)        end-effector position, rotation (first two columns), gripper opening / 8 cm
  "objects" (N, OBJ_DIM)      one token per scene object, fixture region and articulated handle
  "object_mask" (N,) bool     True for real tokens (all of them here; padding appears in `collate`)
  "text" (384,)               instruction embedding
With `grounding=True` each token gains one more column (`obj_dim(True)`): the cosine between the
instruction's embedding and its category words' (MiniLM, full size) — how much the instruction speaks of
it, read from language and names only. The 16-number category code alone is a random projection in which
"butter" and "cream cheese" sit close; a policy must otherwise learn which token the words name from its
demonstrations (in LIBERO it learned where items usually are instead; this column, as it is, did not
change that at 100 demonstrations — FINDINGS #35).
Object tokens carry their position relative to the end effector: for state-based cloning that relative
vector is what the action mostly depends on. `collate` pads the object axis to the batch maximum.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from common.text import DIM as TEXT_DIM
from common.text import TextEmbedder, default_embedder

if TYPE_CHECKING:
    from sim.episode import Observation
    from sim.scene import SceneSpec
    from sim.world import WorldState

GRIPPER_MAX = 0.08  # m, the Panda's full opening
CATEGORY_DIM = 16  # MiniLM category embedding, randomly projected (fixed seed) to this size
KINDS = ("object", "region", "handle")
ROBOT_DIM = 3 + 6 + 1
# kind one-hot, pos, pos - ee, world half extents, rotation 6D, rgba, grasped, open fraction, category
OBJ_DIM = len(KINDS) + 3 + 3 + 3 + 6 + 4 + 1 + 1 + CATEGORY_DIM
GROUNDING_DIM = 1  # instruction ↔ category-words cosine, appended when a policy asks for it
_PROJ = np.random.default_rng(12345).standard_normal((TEXT_DIM, CATEGORY_DIM)).astype(np.float32)
_PROJ /= np.sqrt(CATEGORY_DIM)


def _rot6(mat: np.ndarray) -> np.ndarray:
    return np.asarray(mat)[..., :, :2].swapaxes(-1, -2).reshape(*np.shape(mat)[:-2], 6)


def _words(name: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[\d_/:]+", " ", name)).strip() or name


class _Scene:
    """What a state does not say about its scene: categories and colours, from the spec when there is one."""

    def __init__(self, spec: SceneSpec | None) -> None:
        self.cat: dict[str, str] = {}
        self.rgba: dict[str, tuple[float, ...]] = {}
        if spec is not None:
            for o in spec.objects:
                self.cat[o.name], self.rgba[o.name] = o.category, o.rgba
            for f in spec.fixtures:
                self.cat[f.name], self.rgba[f.name] = f.kind, f.rgba

    def category(self, name: str, kind: str) -> str:
        base = name.split("/")[0].split(":")[0]
        word = self.cat.get(name) or self.cat.get(base) or _words(base)
        if kind == "object":
            return word
        part = _words(name.split("/", 1)[1]) if "/" in name else ""
        return " ".join(w for w in (word, part, "handle" if kind == "handle" else "") if w)

    def color(self, name: str) -> tuple[float, ...]:
        return self.rgba.get(name.split("/")[0], (0.0, 0.0, 0.0, 0.0))


def obj_dim(grounding: bool = False) -> int:
    """Width of an object token: `OBJ_DIM`, plus the grounding column when asked for."""
    return OBJ_DIM + (GROUNDING_DIM if grounding else 0)


def category_codes(words: Sequence[str], embedder: TextEmbedder) -> np.ndarray:
    """(n, CATEGORY_DIM) codes for category words."""
    return embedder.embed_many(list(words)) @ _PROJ


def grounding_scores(words: Sequence[str], text: np.ndarray, embedder: TextEmbedder) -> np.ndarray:
    """(n, 1) cosine between the instruction's embedding `text` and each token's category words."""
    if not len(words):
        return np.zeros((0, GROUNDING_DIM), np.float32)
    e = embedder.embed_many(list(words))
    cos = e @ text / np.maximum(np.linalg.norm(e, axis=1) * np.linalg.norm(text), 1e-8)
    return cos.astype(np.float32)[:, None]


def token_names(s: WorldState) -> list[tuple[str, str]]:
    """(name, kind) of each token `featurize` makes from a state, in its order: objects first."""
    L = s.layout
    return ([(n, "object") for n in L.objects] + [(n, "region") for n in L.regions]
            + [(n, "handle") for n in L.handles])


def _tokens(s: WorldState, scene: _Scene, embedder: TextEmbedder) -> np.ndarray:
    L = s.layout
    names = token_names(s)
    if not names:
        return np.zeros((0, OBJ_DIM), np.float32)
    eye6 = _rot6(np.eye(3))
    pos = np.concatenate([s.obj_pos.reshape(-1, 3), s.region_pos.reshape(-1, 3), s.handle_pos.reshape(-1, 3)])
    mats = [np.asarray(s.obj_mat).reshape(-1, 3, 3), np.asarray(s.region_mat).reshape(-1, 3, 3)]
    rot = np.concatenate([_rot6(m) for m in mats] + [np.tile(eye6, (len(L.handles), 1))])
    half = [
        np.abs(m) @ h for m, h in zip(np.asarray(s.obj_mat).reshape(-1, 3, 3), L.object_half, strict=True)
    ]
    half += [
        np.abs(m) @ h for m, h in zip(np.asarray(s.region_mat).reshape(-1, 3, 3), L.region_half, strict=True)
    ]
    half += [np.full(3, 0.01)] * len(L.handles)
    out = np.zeros((len(names), OBJ_DIM), np.float32)
    cats = category_codes([scene.category(n, k) for n, k in names], embedder)
    for i, (name, kind) in enumerate(names):
        grasped = kind == "object" and bool(s.grasp[s.entity(name)])
        frac = 0.0
        if kind == "handle" and name in L.joints:
            j = L.joints.index(name)
            lo, hi = L.joint_range[j]
            frac = float((s.joint_q[j] - lo) / (hi - lo)) if hi > lo else 0.0
        onehot = np.eye(len(KINDS))[KINDS.index(kind)]
        out[i] = np.concatenate(
            [
                onehot,
                pos[i],
                pos[i] - s.ee_pos,
                half[i],
                rot[i],
                scene.color(name),
                [float(grasped), frac],
                cats[i],
            ]
        )
    return out


def featurize(
    obs_or_state: Observation | WorldState,
    instruction: str | None = None,
    spec: SceneSpec | None = None,
    embedder: TextEmbedder | None = None,
    grounding: bool = False,
) -> dict[str, np.ndarray]:
    """Features of one timestep. An `Observation` brings its own instruction; a bare `WorldState` needs
    `instruction` (or `spec`). `spec` adds colours and category words (else names are used); `grounding`
    appends each token's instruction ↔ category-words cosine."""
    state = getattr(obs_or_state, "state", obs_or_state)
    text = instruction or getattr(obs_or_state, "instruction", None) or (spec.instruction if spec else None)
    if text is None:
        raise ValueError("featurize needs an instruction: pass an Observation, `instruction` or `spec`")
    emb = embedder or default_embedder()
    robot = np.concatenate([state.ee_pos, _rot6(state.ee_mat), [state.gripper / GRIPPER_MAX]])
    scene = _Scene(spec)
    objects, text_emb = _tokens(state, scene, emb), emb.embed(text)
    if grounding:
        words = [scene.category(n, k) for n, k in token_names(state)]
        objects = np.concatenate([objects, grounding_scores(words, text_emb, emb)], axis=1)
    return {
        "robot": robot.astype(np.float32),
        "objects": objects,
        "object_mask": np.ones(len(objects), bool),
        "text": text_emb,
    }


def collate(items: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    """Stack feature dicts into a batch of tensors; "objects"/"object_mask" are padded to the batch's
    largest object count (padding rows are zero and masked out). Other keys are stacked as they are."""
    if not items:
        raise ValueError("collate needs at least one item")
    n = max(1, max(len(it["objects"]) for it in items))
    widths = {np.shape(it["objects"])[-1] for it in items}
    if len(widths) != 1:
        raise ValueError(f"collate: object tokens of different widths {sorted(widths)} (grounding on and "
                         "off in one batch)")
    batch: dict[str, torch.Tensor] = {}
    objs = np.zeros((len(items), n, widths.pop()), np.float32)
    mask = np.zeros((len(items), n), bool)
    for b, it in enumerate(items):
        k = len(it["objects"])
        objs[b, :k] = it["objects"]
        mask[b, :k] = it["object_mask"]
    batch["objects"], batch["object_mask"] = torch.from_numpy(objs), torch.from_numpy(mask)
    for key in items[0]:
        if key not in batch:
            vals = np.stack([np.asarray(it[key]) for it in items])
            batch[key] = torch.from_numpy(vals.astype(np.float32) if vals.dtype == np.float64 else vals)
    return batch
