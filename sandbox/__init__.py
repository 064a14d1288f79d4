"""The only place where generated (LLM-written) code executes: warm, isolated worker processes that run
generation programs and return typed results (see DESIGN.md §2, §5).

Importing this package is light (no numpy): workers import numpy themselves.
"""

from sandbox.config import PRESETS, PoolConfig, SandboxLimits, get_preset
from sandbox.policy import ALLOWED_MODULES, Violation, check_source, find_violations
from sandbox.pool import SandboxPool, SandboxTask, SandboxUnavailable
from sandbox.results import REJECTED_KINDS, ErrorKind, SandboxError, SandboxResult

__all__ = [
    "ALLOWED_MODULES", "PRESETS", "REJECTED_KINDS", "ErrorKind", "PoolConfig", "SandboxError",
    "SandboxLimits", "SandboxPool", "SandboxResult", "SandboxTask", "SandboxUnavailable", "Violation",
    "check_source", "find_violations", "get_preset",
]
