"""The critic (DESIGN §5 steps 5–6): a failed episode → `FailureSummary` (`summary.py`: the phase timeline,
`geometry.py`'s privileged numbers at the failure, `events.py`'s episode-wide events, `factors.py`'s reading
of each factor against the family's ranges, `contrast.py`'s comparison with the round's peers) →
`Diagnosis` (`rules.py` the model-free baseline over the family's phase relevance rows, `diagnose.py` the
rules or LLM critic), then targeted-edit vs control-batch verification (`verify.py`; its statistics are
`common.stats`)."""

from agents.critic.diagnose import AnswerError, CriticConfig, CriticKind, DiagnosisOut, diagnose
from agents.critic.summary import FailureSummary, summarize_failure
from agents.critic.verify import BatchItem, Verification, VerifyConfig, verify

__all__ = [
    "AnswerError", "BatchItem", "CriticConfig", "CriticKind", "DiagnosisOut", "FailureSummary",
    "Verification", "VerifyConfig", "diagnose", "summarize_failure", "verify",
]
