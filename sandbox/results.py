"""Typed sandbox results: ok with `SceneSpec`s, or one `SandboxError` the writer agent can act on.

The error text is what an LLM sees on retry, so it is short and points at the program's own lines.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sim.scene import SceneSpec

ErrorKind = Literal[
    "syntax",  # the source does not parse
    "rejected_import",  # imports a module (or name) outside the allowlist
    "rejected_code",  # the AST check refused a construct (dunder access, eval, ...)
    "timeout",  # CPU-time or wall-clock limit exceeded
    "memory",  # address-space limit exceeded (MemoryError or death near the limit)
    "runtime",  # the program raised an exception
    "invalid_output",  # generate() returned something that is not a SceneSpec (or a list of them)
    "output_too_large",  # the serialised result exceeds the size cap
    "crashed",  # the worker died without a result (segfault, killed, internal error)
    "forbidden",  # a runtime guard or the audit hook denied an operation
]

# Kinds decided before the program runs: the CLI exits 2 for these.
REJECTED_KINDS: frozenset[str] = frozenset({"syntax", "rejected_import", "rejected_code"})


# An error's text is cut (with a marker) rather than refused: a program decides how long its exception's
# message is, and pydantic repeats what it was given.
MAX_MESSAGE_CHARS = 2_000
MAX_TRACEBACK_CHARS = 8_000
ERRORS_SHOWN = 3  # validation errors a summary lists


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a marker saying how many more were cut."""
    return text if len(text) <= limit else f"{text[:limit]} [… {len(text) - limit:,} more characters cut]"


def summarise_validation(err: ValidationError, shown: int = ERRORS_SHOWN) -> str:
    """A pydantic error in one bounded line: the count and the first `shown` errors (where and what, never
    the offending input, which a program chose)."""
    errors = err.errors(include_url=False, include_input=False)
    parts = [f"{cut('.'.join(map(str, e['loc'])) or '(top)', 120)}: {cut(str(e['msg']), 200)}"
             for e in errors[:shown]]
    more = f"; and {len(errors) - shown:,} more" if len(errors) > shown else ""
    noun = "error" if len(errors) == 1 else "errors"
    return f"{len(errors)} validation {noun} for {err.title} ({'; '.join(parts)}{more})"


class SandboxError(BaseModel):
    """Why a program run failed: a kind, a one-line message, the program line and a short traceback."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ErrorKind
    message: str
    line: int | None = None  # 1-based line in the program source, when one is known
    traceback: str = ""  # program frames only ("line N, in fn" + source line), then the message

    @field_validator("message", mode="before")
    @classmethod
    def _cut_message(cls, value: Any) -> Any:
        return cut(value, MAX_MESSAGE_CHARS) if isinstance(value, str) else value

    @field_validator("traceback", mode="before")
    @classmethod
    def _cut_traceback(cls, value: Any) -> Any:
        return cut(value, MAX_TRACEBACK_CHARS) if isinstance(value, str) else value

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"[{self.kind}]{where} {self.message}"


class SandboxResult(BaseModel):
    """The outcome of one program run: `scenes` when ok, otherwise `error`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenes: list[SceneSpec] = Field(default_factory=list)
    error: SandboxError | None = None
    stdout: str = ""  # the program's print/warning output, truncated to the output cap
    duration_s: float = 0.0  # wall time seen by the caller, including queueing for a worker

    @model_validator(mode="after")
    def _one_of(self) -> SandboxResult:
        if self.error is not None and self.scenes:
            raise ValueError("a failed result carries no scenes")
        return self

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def rejected(self) -> bool:
        """True when the program was refused before it ran (syntax, import or AST check)."""
        return self.error is not None and self.error.kind in REJECTED_KINDS

    def exit_code(self) -> int:
        """The CLI convention: 0 ok, 1 program error, 2 rejected before running."""
        if self.error is None:
            return 0
        return 2 if self.rejected else 1

    @classmethod
    def failure(cls, kind: ErrorKind, message: str, *, line: int | None = None, traceback: str = "",
                stdout: str = "", duration_s: float = 0.0) -> SandboxResult:
        """Shorthand for an error result."""
        err = SandboxError(kind=kind, message=message, line=line, traceback=traceback or message)
        return cls(error=err, stdout=stdout, duration_s=duration_s)
