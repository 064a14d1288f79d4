"""CoDA memory (DESIGN §2, §5 step 7): episodic evidence, semantic difficulty modes and procedural
programs in a Chroma store under the run directory, plus the learning-progress ledger that allocates each
round's generation budget.

Names load on first use, so `from memory import Diagnosis` does not import Chroma or torch.
"""

from __future__ import annotations

from common.lazy import lazy_exports

_LAZY = {
    **dict.fromkeys(("Diagnosis", "Verdict", "EpisodeRecord", "DifficultyMode", "ProgramEntry",
                     "ProgressPoint", "edit_side"), "memory.types"),
    **dict.fromkeys(("Ledger", "AllocationConfig", "allocate", "allocate_family", "arm_scores",
                     "smoothed_alp"), "memory.ledger"),
    "Memory": "memory.store", "MemoryConfig": "memory.store",
    "MiniLMEmbeddingFunction": "memory.embedding",
}

__all__, __getattr__ = lazy_exports(__name__, _LAZY)
