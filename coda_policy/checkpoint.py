"""Checkpoints as data: one `<name>.safetensors` file — the tensors, plus the JSON of everything else
(format, config, statistics, step counts) in the file's header metadata. Loading parses JSON and reads raw
tensor bytes (`safetensors`), so nothing a checkpoint holds can run code; no pickle, no `torch.load`.

A checkpoint is a nested dict (what a policy's `checkpoint()` returns): tensors anywhere in it are stored
under their path joined with "/" (module names never contain one), the rest of the tree as JSON with those
leaves left out. One file rather than a folder (`model.safetensors` + `config.json`) because a checkpoint is
passed around as one path — pool workers' policy factories, `--init-policy`, hashes in table records,
`policy/round_NN.safetensors` in a run directory — and one file is written atomically by one rename.

An old pickled `.pt` file is refused with the one command that converts it (`coda_policy.convert`).
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any, Self

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

SUFFIX = ".safetensors"
META = "coda"  # the one header-metadata key, the checkpoint's JSON (one key: the header's bytes are stable)
SEP = "/"
_PICKLE_MAGIC = (b"PK\x03\x04", b"\x80")  # torch.save's zip container; a bare pickle's PROTO opcode


class CheckpointError(ValueError):
    """A file that is not a CoDA checkpoint."""


class OldCheckpointError(CheckpointError):
    """A pickled checkpoint of before the safetensors format."""


def convert_hint(path: str | Path) -> str:
    """The one line that tells what to do with an old pickled checkpoint at `path`."""
    return (f"{path} is a pickled checkpoint of the old format; convert it once with "
            f"`python -m coda_policy.convert {path}` (it writes {Path(path).with_suffix(SUFFIX).name})")


def split(ckpt: dict[str, Any], prefix: str = "") -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(tensors by "/"-joined path, the JSON-able rest of the tree) of a nested checkpoint dict."""
    tensors: dict[str, torch.Tensor] = {}
    rest: dict[str, Any] = {}
    for key, value in ckpt.items():
        if SEP in key:
            raise ValueError(f"checkpoint key {key!r} contains {SEP!r}, which joins nested keys")
        if isinstance(value, torch.Tensor):
            tensors[prefix + key] = value.detach().cpu().contiguous()
        elif isinstance(value, dict):
            sub, rest[key] = split(value, prefix + key + SEP)
            tensors |= sub
        else:
            rest[key] = value
    return tensors, rest


def join(tensors: dict[str, torch.Tensor], rest: dict[str, Any]) -> dict[str, Any]:
    """`split`'s inverse: the tensors put back at their paths in the tree."""
    for path, value in tensors.items():
        *parents, leaf = path.split(SEP)
        node = rest
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return rest


def save_checkpoint(ckpt: dict[str, Any], path: str | Path) -> Path:
    """Write checkpoint dict `ckpt` to `path` (which must end in .safetensors) atomically: a temporary file
    renamed into place, so a reader never sees half a checkpoint."""
    path = Path(path)
    if path.suffix != SUFFIX:
        raise ValueError(f"a checkpoint is a {SUFFIX} file; got {path}")
    tensors, rest = split(ckpt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata={META: json.dumps(rest, sort_keys=True)})
    os.chmod(tmp, _umask_mode(path.parent))  # safetensors writes 0600; a checkpoint is an ordinary file
    tmp.replace(path)
    return path


def check_format(ckpt: dict[str, Any], expected: int) -> None:
    """Refuse a checkpoint whose layout version is not `expected` (a backend's FORMAT)."""
    if ckpt.get("format") != expected:
        raise ValueError(f"checkpoint format {ckpt.get('format')!r} is not {expected}")


class Checkpointed:
    """`save`/`load` for a class whose `checkpoint()` returns its checkpoint dict and whose classmethod
    `from_checkpoint(ckpt)` builds one back from it."""

    def save(self, path: str | Path) -> Path:
        """Write `checkpoint()` to one .safetensors file."""
        return save_checkpoint(self.checkpoint(), path)  # type: ignore[attr-defined]

    @classmethod
    def load(cls, path: str | Path) -> Self:
        return cls.from_checkpoint(load_checkpoint(path))  # type: ignore[attr-defined]


def _umask_mode(folder: Path) -> int:
    """The mode a new file gets in `folder` under the umask (probed: reading the umask means setting it)."""
    probe = folder / f".{uuid.uuid4().hex}.mode"
    os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        return stat.S_IMODE(probe.stat().st_mode)
    finally:
        probe.unlink()


def _check(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    with path.open("rb") as f:
        head = f.read(4)
    if head.startswith(_PICKLE_MAGIC):
        raise OldCheckpointError(convert_hint(path))


def read_meta(path: str | Path) -> dict[str, Any]:
    """The JSON part of a checkpoint (config, format, …) without reading its tensors."""
    path = Path(path)
    _check(path)
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
    except SafetensorError as e:
        raise CheckpointError(f"{path} is not a {SUFFIX} checkpoint ({e})") from None
    if META not in meta:
        raise CheckpointError(f"{path} is a safetensors file but no CoDA checkpoint (no {META!r} metadata)")
    return json.loads(meta[META])


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint dict saved at `path` (tensors on the CPU)."""
    rest = read_meta(path)
    return join(load_file(str(path), device="cpu"), rest)
