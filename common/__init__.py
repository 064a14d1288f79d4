"""CoDA `common`: the leaf every other package may import — the generic plugin `Registry` (with "did you
mean" on typos) and the offline MiniLM `TextEmbedder` shared by the policy and memory. It imports nothing
of ours. Names load lazily, so `import common` pulls in neither torch nor numpy."""

from __future__ import annotations

from common.lazy import lazy_exports

_LAZY = {
    "Registry": "common.registry", "UnknownNameError": "common.registry",
    "TextEmbedder": "common.text", "default_embedder": "common.text", "DIM": "common.text",
}

__all__, __getattr__ = lazy_exports(__name__, _LAZY)
