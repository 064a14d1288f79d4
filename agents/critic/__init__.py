"""The critic (DESIGN §5 steps 5–6): a failed episode → `FailureSummary` (`summary.py`, from predicates and
privileged numbers; `factors.py` reads each factor against the family's ranges) → `Diagnosis` (`rules.py`
the model-free baseline, `diagnose.py` the rules or LLM critic), then targeted-edit vs control-batch
verification (`verify.py`)."""

from agents.critic.diagnose import AnswerError, CriticConfig, CriticKind, DiagnosisOut, diagnose
from agents.critic.summary import FailureSummary, summarize_failure
from agents.critic.verify import BatchItem, Verification, VerifyConfig, verify

__all__ = [
    "AnswerError", "BatchItem", "CriticConfig", "CriticKind", "DiagnosisOut", "FailureSummary",
    "Verification", "VerifyConfig", "diagnose", "summarize_failure", "verify",
]
