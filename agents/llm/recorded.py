"""The `replay` backend: record real completions once, replay them deterministically in tests.

Recordings live in one JSON file keyed by the request's content key (rendered prompt + images + schema,
not the backend), so a fixture recorded with the local server replays identically under any name. Raw
completions are stored, not parsed objects: a malformed answer that was recorded replays as the same
`LLMOutputError`, which is what the graph's retry tests need.

Modes:
- `replay`: answer only from the file; an unseen prompt raises `ReplayMissError` naming the prompt.
- `record`: answer from the file when present, otherwise ask the wrapped backend and save the answer.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Literal

from agents.llm.base import Completer, Completion, LLMError, Request

FORMAT_VERSION = 1


class ReplayMissError(LLMError):
    """A replay-only backend was asked a prompt it has no recording for."""


class ReplayCompleter:
    """`Completer` over a recordings file, optionally recording through another completer."""

    backend = "replay"

    def __init__(self, path: Path, *, mode: Literal["replay", "record"] = "replay",
                 inner: Completer | None = None) -> None:
        if mode == "record" and inner is None:
            raise ValueError("record mode needs the backend to record from (inner=...)")
        self.path = Path(path)
        self.mode = mode
        self.inner = inner
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = self._load()

    @property
    def identity(self) -> dict[str, Any]:
        """The file, not the recorded backend: replays of one file are interchangeable."""
        return {"backend": self.backend, "model": f"replay:{self.path.name}"}

    @property
    def supports_images(self) -> bool:
        """Images are part of the key, so a recording made with images replays with them."""
        return True if self.inner is None else self.inner.supports_images

    def complete(self, request: Request) -> Completion:
        """The recorded completion for `request`; records it first in record mode."""
        key = request.content_key()
        entry = self._entries.get(key)
        if entry is not None:
            return Completion.from_json(entry["completion"])
        if self.mode == "replay" or self.inner is None:
            raise ReplayMissError(self._miss_message(request))
        completion = self.inner.complete(request)
        self._save(key, request, completion)
        return completion

    def close(self) -> None:
        """Close the wrapped backend, if any."""
        if self.inner is not None:
            self.inner.close()

    def __len__(self) -> int:
        return len(self._entries)

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            if self.mode == "replay":
                raise FileNotFoundError(f"replay file {self.path} does not exist; record it first")
            return {}
        data = json.loads(self.path.read_text())
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: unsupported replay format {data.get('version')!r}")
        return dict(data["entries"])

    def _save(self, key: str, request: Request, completion: Completion) -> None:
        entry = {
            "prompt_name": request.prompt_name,
            "prompt_hash": request.prompt_hash,
            "schema": request.schema.__name__ if request.schema else None,
            "max_tokens": request.max_tokens,
            "recorded_with": self.inner.identity if self.inner else None,
            "completion": completion.to_json(),
        }
        with self._lock:
            self._entries[key] = entry
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": FORMAT_VERSION, "entries": self._entries}, indent=1,
                                      sort_keys=True) + "\n")
            os.replace(tmp, self.path)

    def _miss_message(self, request: Request) -> str:
        name = request.prompt_name
        same_name = [e["prompt_hash"] for e in self._entries.values() if e["prompt_name"] == name]
        hint = (f"{len(same_name)} recordings of {request.prompt_name!r} exist with other content"
                f" (prompt hashes {', '.join(same_name[:5])}): its rendered text, images or schema changed"
                if same_name else f"no recording of prompt {request.prompt_name!r} at all")
        return (f"replay file {self.path} has no answer for prompt {request.prompt_name!r}"
                f" (prompt hash {request.prompt_hash}); {hint}. Re-record it with a real backend"
                f" (ReplayCompleter(path, mode='record', inner=...)).")
