"""What both writers share: their configuration and the error an unusable answer raises."""

from __future__ import annotations

from dataclasses import dataclass

from agents.critic.diagnose import AnswerError


@dataclass(frozen=True, kw_only=True)
class WriterConfig:
    """How programs are written and checked."""

    # allow edits into the OOD range (off: programs stay inside the family's ID ranges, so training never
    # sees the held-out OOD values)
    allow_ood: bool = False
    # a side-only mode ("high"/"low" without an edit) gets this share of the ID range at that end
    band: float = 0.25
    # extra LLM attempts inside one call (the caller bounds the rest through `feedback`)
    retries: int = 0
    # let the LLM return a whole new generation source (else it may only edit factors)
    allow_source: bool = False
    # rules training writer: add a subgoal that stages the diagnosed phase more finely
    emphasis: bool = True
    # token budgets: an edit spec, a new source, a subgoal list
    max_tokens_edit: int = 400
    max_tokens_source: int = 4000
    max_tokens_subgoals: int = 800

    def __post_init__(self) -> None:
        if not 0.0 < self.band <= 1.0 or self.retries < 0:
            raise ValueError("band must be in (0, 1] and retries >= 0")


class WriterError(AnswerError):
    """A writer answer that cannot become a valid program; `feedback()` says why."""
