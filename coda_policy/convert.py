"""Convert old pickled `.pt` checkpoints to the safetensors format (`coda_policy.checkpoint`), once:

    python -m coda_policy.convert runs/old/policy/round_00.pt [more.pt ...] [--out NEW.safetensors]

This is the one place the project unpickles a checkpoint, and it says so. It uses torch's restricted
unpickler (`weights_only=True`: tensors, dicts, lists and numbers only, no arbitrary code), which reads every
checkpoint this project wrote; a file that needs more is refused, not loaded. The converted checkpoint is
loaded back and compared tensor by tensor before the command reports success. Each file is written beside
its source with the suffix `.safetensors` (or at `--out` when one file is given); the `.pt` is left alone.

    python -m coda_policy.convert POLICY.safetensors --max-objects 20 --out ROOMY.safetensors

raises an object-token policy's bound on object tokens (`max_objects`: a bound, not a weight — no tensor
depends on it), so a policy trained on the core space can start a run in the extended space, whose scenes
hold up to 20 objects. The tensors are copied unchanged and checked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from coda_policy import checkpoint
from common.cli import comma_list, command_parser


def _same(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):  # JSON has no tuples: (1, 2) comes back as [1, 2]
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def convert(old: str | Path, new: str | Path | None = None) -> Path:
    """Write the safetensors checkpoint of pickled checkpoint `old` (default: beside it) and check it loads
    back identical; returns its path."""
    import torch

    old = Path(old)
    new = Path(new) if new is not None else old.with_suffix(checkpoint.SUFFIX)
    if new.resolve() == old.resolve():
        raise ValueError(f"{old} would be overwritten; give --out")
    try:
        ckpt = torch.load(old, map_location="cpu", weights_only=True)
    except Exception as e:  # torch's restricted unpickler fails on a non-checkpoint with any error type
        raise ValueError(f"{old} is not a torch checkpoint that loads with weights_only=True "
                         f"({type(e).__name__}: {e})") from e
    if not isinstance(ckpt, dict):
        raise ValueError(f"{old} holds a {type(ckpt).__name__}, not a checkpoint dict")
    checkpoint.save_checkpoint(ckpt, new)
    if not _same(ckpt, checkpoint.load_checkpoint(new)):
        new.unlink()
        raise RuntimeError(f"{new} did not load back identical to {old}; removed it")
    return new


def with_room(src: str | Path, dst: str | Path, max_objects: int) -> Path:
    """Write object-token checkpoint `src` to `dst` with its `max_objects` bound raised to `max_objects`
    (every tensor the same, checked); returns `dst`."""
    src, dst = Path(src), Path(dst)
    if dst.resolve() == src.resolve():
        raise ValueError(f"{src} would be overwritten; give another --out")
    ckpt = checkpoint.load_checkpoint(src)
    have = ckpt.get("config", {}).get("max_objects")
    if have is None:
        raise ValueError(f"{src} is not an object-token policy (its config has no max_objects)")
    if max_objects < have:
        raise ValueError(f"{src} has room for {have} object tokens; lowering the bound to {max_objects} "
                         "would refuse scenes it was trained on")
    tensors, _ = checkpoint.split(ckpt)
    ckpt["config"]["max_objects"] = max_objects
    checkpoint.save_checkpoint(ckpt, dst)
    back = checkpoint.load_checkpoint(dst)
    if not _same(tensors, checkpoint.split(back)[0]) or back["config"]["max_objects"] != max_objects:
        dst.unlink()
        raise RuntimeError(f"{dst} did not load back with {src}'s tensors; removed it")
    return dst


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("coda_policy.convert", __doc__)
    ap.add_argument("old", type=comma_list(Path), help="pickled .pt checkpoint(s), comma-separated")
    ap.add_argument("--out", type=Path, default=None, help="where to write (one input only)")
    ap.add_argument("--max-objects", type=int, default=None,
                    help="instead: copy one .safetensors object-token policy to --out with this bound")
    a = ap.parse_args(argv)
    if a.out is not None and len(a.old) > 1:
        ap.error("--out takes one input file")
    if a.max_objects is not None:
        if a.out is None or len(a.old) > 1:
            ap.error("--max-objects takes one input file and --out")
        try:
            print(f"wrote {with_room(a.old[0], a.out, a.max_objects)}")
        except (ValueError, FileNotFoundError, RuntimeError) as e:  # a bad file or bound: one line
            print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        return 0
    for old in a.old:
        if not old.is_file():
            print(f"error: no such file: {old}", file=sys.stderr)
            return 2
        print(f"unpickling {old} once with torch.load(weights_only=True) to convert it")
        try:
            print(f"wrote {convert(old, a.out)}")
        except (ValueError, RuntimeError) as e:  # a bad file, not a bug: one line
            print(f"error: cannot convert {old}: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
