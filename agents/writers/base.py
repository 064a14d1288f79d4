"""What both writers share: their configuration (`WriterConfig`, defined in `agents.config` so the run's
config stays light to import) and the errors they raise — `WriterError` for an unusable LLM answer,
`ProgramRejected` when the rules writer has no template for the mode."""

from __future__ import annotations

from agents.config import WriterConfig
from agents.critic.diagnose import AnswerError
from programs.errors import ProgramRejected

__all__ = ["ProgramRejected", "WriterConfig", "WriterError"]


class WriterError(AnswerError):
    """A writer answer that cannot become a valid program; `feedback()` says why."""
