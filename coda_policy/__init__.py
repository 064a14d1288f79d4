"""CoDA `coda_policy`: the action policy (object tokens → transformer → flow-matching action chunks), its
features, data, supervised training and closed-loop evaluation (see DESIGN.md §2 and §4).

Each policy backend is a folder (`object_token/`, `pi05/`: `configuration_<name>.py` beside
`modeling_<name>.py`, found by `registry`); a checkpoint is one .safetensors file (`checkpoint`), and the
committed ones are listed in `checkpoints/MANIFEST.json` (`pretrained`).

Names load lazily so that `import coda_policy` does not pull in torch or MuJoCo.
"""

from __future__ import annotations

from common.lazy import lazy_exports

_LAZY = {
    "ObjectTokenConfig": "coda_policy.object_token.configuration_object_token",
    "ObjectTokenPolicy": "coda_policy.object_token.modeling_object_token",
    "Pi05Config": "coda_policy.pi05.configuration_pi05",
    "save_checkpoint": "coda_policy.checkpoint",
    "load_checkpoint": "coda_policy.checkpoint",
    "POLICIES": "coda_policy.registry",
    "CONFIGS": "coda_policy.registry",
    "make_policy": "coda_policy.registry",
    "make_config": "coda_policy.registry",
    "load_policy": "coda_policy.registry",
    "policy_names": "coda_policy.registry",
    "TextEmbedder": "common.text",
    "featurize": "coda_policy.object_token.features",
    "collate": "coda_policy.object_token.features",
    "NormStats": "coda_policy.object_token.normalize",
    "ChunkDataset": "coda_policy.dataset",
    "ChunkRef": "coda_policy.dataset",
    "load_episodes": "coda_policy.dataset",
    "EvalResult": "coda_policy.evaluate",
    "CheckpointPolicy": "coda_policy.evaluate",
    # the critic side (helper modules critic.py, shaping.py, awr.py)
    "ChunkCritic": "coda_policy.critic",
    "ChunkCriticConfig": "coda_policy.critic",
    "ShapingConfig": "coda_policy.shaping",
    "AWRConfig": "coda_policy.awr",
}

__all__, __getattr__ = lazy_exports(__name__, _LAZY)
