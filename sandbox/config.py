"""Sandbox limits and pool configuration, with named presets."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from common.registry import Registry


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """Per-program resource limits, enforced in the worker's task process (and backstopped by the parent)."""

    # CPU seconds (RLIMIT_CPU, whole seconds, rounded up): SIGXCPU ends runaway loops.
    cpu_s: float = 5.0
    # Wall-clock seconds before the task process is killed; catches anything that does not burn CPU.
    wall_s: float = 10.0
    # Address-space headroom (MiB) above the warm worker's own footprint (RLIMIT_AS).
    memory_mb: int = 1024
    # Serialised result cap (bytes); larger results become `output_too_large`.
    max_result_bytes: int = 4_000_000
    # Captured print/warning output kept (characters); the rest is dropped with a marker.
    max_output_chars: int = 8_000
    # Largest program source accepted (bytes); bigger sources are rejected before parsing.
    max_source_bytes: int = 200_000
    # Largest file the program may write inside its scratch directory (RLIMIT_FSIZE, bytes).
    max_file_bytes: int = 16_000_000
    # Open file descriptors (RLIMIT_NOFILE).
    max_open_files: int = 64
    # Bytes and files (inodes) the task's scratch directory can hold in all: a private tmpfs of this size.
    max_scratch_bytes: int = 64_000_000
    max_scratch_files: int = 256

    def __post_init__(self) -> None:
        if self.cpu_s <= 0 or self.wall_s <= 0:
            raise ValueError("cpu_s and wall_s must be positive")
        if min(self.memory_mb, self.max_result_bytes, self.max_output_chars, self.max_source_bytes,
               self.max_scratch_bytes, self.max_scratch_files) <= 0:
            raise ValueError("size limits must be positive")
        if self.max_open_files < 16:
            raise ValueError("max_open_files below 16 breaks the interpreter")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class PoolConfig:
    """How many warm workers to keep and which limits apply to each program run by default."""

    # Warm worker processes; each runs one program at a time (in a fresh fork of itself).
    workers: int = 2
    # Default limits; `SandboxPool.run(..., limits=...)` may override them per call.
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    # Seconds to wait for a freshly started worker to import numpy/pydantic and report ready.
    start_timeout_s: float = 60.0
    # Extra seconds the parent waits beyond `limits.wall_s` before killing an unresponsive worker.
    grace_s: float = 5.0
    # When running as root, task processes switch to this uid/gid (nobody); None keeps the caller's.
    drop_to_uid: int | None = 65534
    # The kernel boundary (`sandbox.fsview`: a Landlock filesystem view and a size-limited private tmpfs
    # scratch): "require" refuses to start without it; "if_available" applies what the kernel offers and
    # reports the rest in `SandboxPool.isolation` (machines without Landlock — not safe against a hostile
    # program); "off" skips it (only for measuring its cost, `python -m bench.sandbox`).
    os_boundary: Literal["require", "if_available", "off"] = "require"
    # False hands programs the real builtins and skips the static check and audit hook, so that tests can
    # show what the OS boundary holds on its own when a program wins inside its interpreter. Never in a run.
    python_layers: bool = True

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("a pool needs at least one worker")
        if self.start_timeout_s <= 0 or self.grace_s <= 0:
            raise ValueError("timeouts must be positive")
        if self.os_boundary not in ("require", "if_available", "off"):
            raise ValueError(f"os_boundary must be 'require', 'if_available' or 'off', "
                             f"got {self.os_boundary!r}")


PRESETS: Registry[PoolConfig] = Registry("sandbox preset")
PRESETS.register("default", PoolConfig())
# Seconds, CPU, tiny: one worker, tight limits; what tests and the smoke pipeline use.
PRESETS.register("smoke", PoolConfig(workers=1, limits=SandboxLimits(cpu_s=1, wall_s=3, memory_mb=256)))


def get_preset(name: str) -> PoolConfig:
    """A named pool preset; a typo raises `UnknownNameError` with a "did you mean" hint."""
    return PRESETS.get(name)
