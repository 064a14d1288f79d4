"""Where torch work runs: `cpu` (the default, bit-reproducible on one machine), `cuda` / `cuda:N`, or `auto`
(the first CUDA device when torch sees one, else the CPU).

The device is a choice of the run, never of a checkpoint: checkpoints are written with CPU tensors and load
anywhere, and a policy moves to the device where it trains or acts. Training draws its minibatch indices
and the sampling noise of `select_action` from CPU generators, so the same seed picks the same minibatches
and the same initial noise on every device (the arithmetic itself still differs by float rounding).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a device is resolved: configs check a spec without it
    import torch

_SPEC = re.compile(r"^(cpu|auto|cuda(:\d+)?)$")
GPU_INSTALL = ("the torch installed by `make setup` is the CPU build; on a machine with an NVIDIA GPU "
               "install a CUDA build into the same environment, e.g. `.venv/bin/pip install "
               "--force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128` "
               "(docs/loop.md, 'Your GPU')")


class DeviceUnavailable(ValueError):
    """The requested device does not exist here; the message says how to get it."""


def check_device_spec(spec: str) -> str:
    """`spec` if it names a device this module understands (cpu, auto, cuda, cuda:N), else ValueError."""
    if not isinstance(spec, str) or not _SPEC.match(spec):
        raise ValueError(f"device must be one of cpu, cuda, cuda:N, auto; got {spec!r}")
    return spec


def resolve_device(spec: str = "cpu") -> torch.device:
    """The torch device `spec` names on this machine. `auto` never fails; `cuda` fails with an actionable
    `DeviceUnavailable` when this torch has no CUDA or sees no such GPU."""
    import torch

    check_device_spec(spec)
    if spec == "cpu":
        return torch.device("cpu")
    if spec == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if not torch.cuda.is_available():
        build = ("a CPU build" if torch.version.cuda is None
                 else f"CUDA {torch.version.cuda}, but no GPU is visible")
        raise DeviceUnavailable(f"device {spec!r} asked for, but torch {torch.__version__} is {build}: "
                                f"{GPU_INSTALL}; or pass --device cpu (or auto)")
    dev = torch.device(spec)
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise DeviceUnavailable(f"device {spec!r} asked for, but torch sees {torch.cuda.device_count()} "
                                f"CUDA device(s) (indices 0..{torch.cuda.device_count() - 1})")
    return dev


def to_device(batch: Mapping[str, torch.Tensor], device: torch.device | str) -> dict[str, torch.Tensor]:
    """Every tensor of a batch on `device` (no copy where it already is)."""
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter (the CPU for a module without parameters)."""
    import torch

    p = next(module.parameters(), None)
    return p.device if p is not None else torch.device("cpu")
