"""The run directory of DESIGN §7 and the file conventions every node follows.

    runs/<name>/
      config.json  metrics.jsonl  report.html  trace.sqlite  llm_calls.jsonl  llm_cache.sqlite
      memory/                              Chroma store + ledger.json + reuse.json
      programs/round_03/gen_<mode>_<hash8>.py (+ .json)   train_<mode>_<hash8>.py (+ .json)
      scenes/round_03/<family>_<mode>_<scene id>.json (+ .png)
      episodes/round_03/demo_<scene id>.npz  roll_<scene id>_<policy hash>.npz (+ .json)
      validity/round_03/<scene id>.json    diagnoses/round_03/<diagnosis id>.json
      policy/round_03.safetensors   train/round_03.json   snapshots/round_03/memory/

State holds paths relative to the root, so a copied run directory (a fork) stays valid. Files are
written atomically and named by content, so a node that re-runs after a crash finds its own earlier
output and reuses it instead of producing a second copy.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, overload


class RunFile:
    """A read-only attribute of `RunDir`: the path of one fixed file (or folder) under the run's root."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, rundir: None, owner: type | None = None) -> RunFile: ...

    @overload
    def __get__(self, rundir: RunDir, owner: type | None = None) -> Path: ...

    def __get__(self, rundir: RunDir | None, owner: type | None = None) -> Path | RunFile:
        return self if rundir is None else rundir.root / self.name

    def __set__(self, rundir: RunDir, value: object) -> None:
        raise AttributeError(f"RunDir's {self.name} path is fixed")


class RunDir:
    """Paths inside one run directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def rel(self, path: str | Path) -> str:
        """`path` relative to the run directory (as state stores it)."""
        p = Path(path)
        try:
            return str(p.resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(p)

    def abs(self, rel: str | Path) -> Path:
        """A state path made absolute."""
        p = Path(rel)
        return p if p.is_absolute() else self.root / p

    def round_dir(self, kind: str, round_no: int) -> Path:
        """`<root>/<kind>/round_XX/`, created."""
        d = self.root / kind / f"round_{round_no:02d}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def dir(self, kind: str) -> Path:
        """`<root>/<kind>/`, created."""
        d = self.root / kind
        d.mkdir(parents=True, exist_ok=True)
        return d

    def policy(self, round_no: int) -> Path:
        return self.dir("policy") / f"round_{round_no:02d}.safetensors"

    # the run's fixed files, `<root>/<name>` (see the module docstring)
    config = RunFile("config.json")
    metrics = RunFile("metrics.jsonl")
    report = RunFile("report.html")
    trace = RunFile("trace.sqlite")
    memory = RunFile("memory")
    llm_calls = RunFile("llm_calls.jsonl")
    llm_cache = RunFile("llm_cache.sqlite")


def write_json(path: str | Path, obj: Any) -> Path:
    """Write JSON atomically (a crash leaves the old file or the new one, never half of one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str) + "\n")
    os.replace(tmp, path)
    return path


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def file_digest(path: str | Path, n: int = 8) -> str:
    """First `n` hex digits of a file's SHA-256 (names episodes after the policy that produced them)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:n]


def append_metrics(path: str | Path, row: dict[str, Any]) -> None:
    """Append a round's row to metrics.jsonl, replacing an earlier row of the same round (a resumed round
    writes its row again)."""
    path = Path(path)
    rows = [r for r in read_metrics(path) if r.get("round") != row.get("round")]
    rows.append(row)
    rows.sort(key=lambda r: r.get("round", 0))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    os.replace(tmp, path)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
