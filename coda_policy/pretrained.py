"""The committed checkpoints: one folder, `checkpoints/` at the top of the repository, and its
`MANIFEST.json` — every file with its sha256, its size and what made it (command and commit; for a file
converted from an old pickled `.pt`, that file's path and sha256).

Results recorded before the conversion name a policy by the sha256 of its `.pt` file; `canonical_sha256`
maps such a hash to the converted file's, so a record and the file that now holds its policy still match
(the conversion changes the encoding, not one weight: `tests/coda_policy/test_pretrained.py`).

Light on purpose (no torch): presets and harnesses import it to name a file.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "checkpoints"
MANIFEST = ROOT / "MANIFEST.json"
# the object-token policy after SFT on seed demonstrations of Table 1's four families (its seed-0
# bootstrap): the `quickstart` preset starts from it
SEED_SFT_4FAM = ROOT / "seed_sft_4fam.safetensors"


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def table_bootstrap(table: str, seed: int) -> Path:
    """Where a table's kept bootstrap policy of `seed` lies (it may not exist)."""
    return ROOT / table / f"seed{seed}_round_00.safetensors"


def manifest(path: Path = MANIFEST) -> list[dict[str, Any]]:
    """The manifest's entries (file paths relative to its folder)."""
    return json.loads(path.read_text())["files"] if path.exists() else []


@cache
def _aliases(path: Path) -> dict[str, str]:
    return {e["converted_from"]["sha256"]: e["sha256"] for e in manifest(path) if "converted_from" in e}


def canonical_sha256(digest: str | None, path: Path = MANIFEST) -> str | None:
    """The sha256 a policy has now: a converted `.pt` hash → its safetensors file's; others as given."""
    return None if digest is None else _aliases(path).get(digest, digest)


def record(file: Path, made_by: str, path: Path = MANIFEST, **extra: Any) -> dict[str, Any]:
    """Add or replace `file`'s entry (its sha256 and size now, `made_by`, anything in `extra`)."""
    entries = [e for e in manifest(path) if e["file"] != file.relative_to(path.parent).as_posix()]
    entry = {"file": file.relative_to(path.parent).as_posix(), "sha256": sha256(file),
             "bytes": file.stat().st_size, "made_by": made_by, **extra}
    entries = sorted([*entries, entry], key=lambda e: e["file"])
    head = json.loads(path.read_text()) if path.exists() else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({**head, "files": entries}, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)
    _aliases.cache_clear()
    return entry
