"""LLM backends for CoDA's agents: one `LLM` contract (`structured` / `text`), Jinja2 prompt files, a JSONL
call log and a content-keyed cache, and three registered backends (`local`, `openai`, `replay`).
Build one with `make_llm(name, config, ...)`. Without a model (`--llm rules`) the loop calls no LLM at all:
the rules critic (`agents.critic.rules`) and the template writers (`agents.writers`) answer instead.
"""

from agents.llm.base import (
    DEFAULT_MAX_TOKENS,
    LLM,
    CallRecord,
    Completer,
    Completion,
    LLMBackendError,
    LLMError,
    LLMOutputError,
    LLMUnsupportedError,
    Request,
)
from agents.llm.client import PromptedLLM
from agents.llm.gguf import MODELS, ModelSpec, ensure_model
from agents.llm.local import LocalCompleter, LocalConfig, LocalServer
from agents.llm.openai_chat import OpenAICompleter, OpenAIConfig
from agents.llm.prompts import PROMPTS_DIR, PromptError, PromptLibrary, RenderedPrompt
from agents.llm.recorded import ReplayCompleter, ReplayMissError
from agents.llm.registry import DEFAULT_BACKEND, LLM_BACKENDS, ReplayConfig, make_llm
from agents.llm.store import CallLog, ResponseCache

__all__ = [
    "DEFAULT_BACKEND", "DEFAULT_MAX_TOKENS", "LLM", "LLM_BACKENDS", "MODELS", "PROMPTS_DIR", "CallLog",
    "CallRecord", "Completer", "Completion", "LLMBackendError", "LLMError", "LLMOutputError",
    "LLMUnsupportedError", "LocalCompleter", "LocalConfig", "LocalServer", "ModelSpec", "OpenAICompleter",
    "OpenAIConfig", "PromptError", "PromptLibrary", "PromptedLLM", "RenderedPrompt", "ReplayCompleter",
    "ReplayConfig", "ReplayMissError", "Request", "ResponseCache", "ensure_model", "make_llm",
]
