"""CoDA `common`: the leaf every other package may import — the generic plugin `Registry` (with "did you
mean" on typos) and the offline MiniLM `TextEmbedder` shared by the policy and memory. It imports nothing
of ours. Names load lazily, so `import common` pulls in neither torch nor numpy."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Registry": "common.registry", "UnknownNameError": "common.registry",
    "TextEmbedder": "common.text", "default_embedder": "common.text", "DIM": "common.text",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'common' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
