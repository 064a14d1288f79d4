"""Where LLM calls leave traces: a JSONL call log (one line per call, cache hits included) and a SQLite
response cache keyed by content, so a rerun of the same round does not pay for the same answer twice.

Both are safe to share between threads of one process and between processes (the log appends whole
lines under a lock with O_APPEND; SQLite serialises writers).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.llm.base import CallRecord, Completion, sha256_hex


class CallLog:
    """Appends `CallRecord`s as JSON lines to `path`; `read()` returns them as dicts. The texts of a call
    (its system and user messages, the answer) are stored beside it, content-addressed —
    `<dir>/llm_texts/<sha256[:16]>.txt`, written once however many calls share them — and the row keeps
    their hashes under `texts`; `text(sha)` reads one back."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.texts_dir = self.path.parent / "llm_texts"
        self._lock = threading.Lock()

    def _store(self, text: str) -> str:
        sha = sha256_hex(text)[:16]
        path = self.texts_dir / f"{sha}.txt"
        if not path.exists():
            self.texts_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        return sha

    def append(self, record: CallRecord, texts: Mapping[str, str] | None = None) -> None:
        """Write one record (with a wall-clock timestamp) and its texts (e.g. system, user, answer)."""
        row = {"time": round(time.time(), 3), **dataclasses.asdict(record)}
        if texts:
            row["texts"] = {k: self._store(v) for k, v in texts.items()}
        line = json.dumps(row, sort_keys=True) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)

    def text(self, sha: str) -> str | None:
        """A stored text by its hash; None when it is not there (a log written before texts were kept)."""
        path = self.texts_dir / f"{sha}.txt"
        return path.read_text(encoding="utf-8") if path.exists() else None

    def read(self) -> list[dict[str, Any]]:
        """All records so far, oldest first."""
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]


class ResponseCache:
    """Completions by content key in one SQLite file. Only usable answers are stored."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()  # sqlite3 connections must not cross threads
        with self._conn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS completions ("
                " key TEXT PRIMARY KEY, prompt_name TEXT, completion TEXT, created REAL)"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30)
            self._local.conn = conn
        return conn

    def get(self, key: str) -> Completion | None:
        """The stored completion for `key`, or None."""
        row = self._conn().execute("SELECT completion FROM completions WHERE key = ?", (key,)).fetchone()
        return None if row is None else Completion.from_json(json.loads(row[0]))

    def put(self, key: str, prompt_name: str, completion: Completion) -> None:
        """Store (or replace) the completion for `key`."""
        with self._conn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?)",
                (key, prompt_name, json.dumps(completion.to_json()), time.time()),
            )

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
