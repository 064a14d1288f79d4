"""The π0.5 backend: lerobot 0.4.4's PI05 behind `coda_policy.registry` (config: `configuration_pi05`).

Everything here imports lerobot and transformers, which live in the optional environment `make setup-pi05`
builds (.venv-pi05). Modules: `gemma_adarms` (the Gemma behaviour PI05 needs, on PyPI's transformers),
`tiny` (a CPU-sized backbone and a byte tokenizer), `modeling` (`Pi05Policy`), `data` (training samples
with replayed camera frames).

Import order matters in one way: triton (pulled in by torch's CUDA build) bundles its own LLVM, and loading
it after Mesa's llvmpipe has made a GL context (any MuJoCo render on a machine without a GPU driver)
segfaults the process. Importing this package loads triton first, so import it before rendering.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("triton") is not None:
    import triton  # noqa: F401  (before any GL context: see the docstring)
