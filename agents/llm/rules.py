"""The `rules` backend: no language model. It is CoDA's rule-based baseline (critic over privileged
simulator state, template-based program edits), so nodes can keep calling `llm.structured(...)` and the
same graph runs with and without a model.

Decision: `structured(prompt_name, variables, schema)` calls the Python function registered for that
prompt name with the same variables (the template is not rendered; the function reads the variables
directly). `text(...)` always raises `LLMUnsupportedError`: there is no honest rule-based free text.
A prompt without a registered function raises `LLMUnsupportedError` with "did you mean".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.llm.base import (
    DEFAULT_MAX_TOKENS,
    CallRecord,
    ImageInput,
    LLMOutputError,
    LLMUnsupportedError,
    M,
    sha256_hex,
)
from agents.llm.store import CallLog
from common.registry import Registry, UnknownNameError

RuleFn = Callable[[Mapping[str, Any]], BaseModel | Mapping[str, Any]]


class RulesLLM:
    """`LLM` whose structured answers come from registered Python functions, one per prompt name."""

    backend = "rules"
    supports_images = False  # rule functions read privileged state; images add nothing

    def __init__(self, rules: Mapping[str, RuleFn] | None = None, *, call_log: CallLog | None = None) -> None:
        self.rules: Registry[RuleFn] = Registry("rule (prompt handled by the rules backend)")
        for name, fn in (rules or {}).items():
            self.rules.register(name, fn)
        self.call_log = call_log

    def register(self, prompt_name: str, fn: RuleFn) -> None:
        """Handle `prompt_name` with `fn(variables) -> schema instance (or a dict validated into it)`."""
        self.rules.register(prompt_name, fn)

    def structured(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        schema: type[M],
        *,
        images: Sequence[ImageInput] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> M:
        """The registered function's answer, validated against `schema`."""
        start = time.perf_counter()
        try:
            fn = self.rules.get(prompt_name)
        except UnknownNameError as e:
            raise LLMUnsupportedError(f"the rules backend has no rule for this prompt: {e}") from None
        try:
            result = _validated(prompt_name, fn(variables), schema)
        except Exception as e:
            self._log(prompt_name, variables, schema.__name__, start, getattr(e, "problem", type(e).__name__))
            raise
        self._log(prompt_name, variables, schema.__name__, start, None, result)
        return result

    def text(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        *,
        images: Sequence[ImageInput] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:
        """Always raises: the rules backend writes no free text."""
        raise LLMUnsupportedError(
            f"the rules backend has no language model and cannot write free text (prompt {prompt_name!r});"
            " use a structured rule, or run with --llm local / --llm openai"
        )

    def close(self) -> None:
        """Nothing to release."""

    def _log(self, prompt_name: str, variables: Mapping[str, Any], schema: str, start: float,
             error: str | None, answer: BaseModel | None = None) -> None:
        if self.call_log is None:
            return
        # no prompt is rendered: the rule reads the variables
        texts = {"variables": json.dumps(dict(variables), indent=1, sort_keys=True, default=str)}
        if answer is not None:
            texts["answer"] = answer.model_dump_json(indent=1)
        self.call_log.append(CallRecord(
            prompt_name=prompt_name,
            prompt_hash=sha256_hex(json.dumps(dict(variables), sort_keys=True, default=str))[:16],
            backend=self.backend, model="rules", kind="structured", cache_hit=False,
            latency_s=round(time.perf_counter() - start, 4), ok=error is None, error=error, schema=schema,
        ), texts=texts)


def _validated(prompt_name: str, out: BaseModel | Mapping[str, Any], schema: type[M]) -> M:
    if isinstance(out, schema):
        return out
    payload = out.model_dump() if isinstance(out, BaseModel) else dict(out)
    try:
        return schema.model_validate(payload)
    except ValidationError as e:
        raise LLMOutputError(prompt_name, "schema", str(e), json.dumps(payload, default=str)) from None
