"""`PromptedLLM`: the `LLM` every text-moving backend is wrapped in. It renders the template, looks the
request up in the cache, asks the `Completer`, validates the answer against the schema, stores usable
answers and logs every call (hits, misses and failures alike).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents.llm.base import (
    DEFAULT_MAX_TOKENS,
    CallRecord,
    Completer,
    Completion,
    ImageInput,
    LLMError,
    LLMOutputError,
    LLMUnsupportedError,
    M,
    OutputProblem,
    Request,
    image_bytes,
    sha256_hex,
)
from agents.llm.prompts import PromptLibrary
from agents.llm.store import CallLog, ResponseCache

T = TypeVar("T")


def parse_structured(request: Request, completion: Completion, schema: type[M]) -> M:
    """Validate a structured completion; raise `LLMOutputError` saying what is wrong with it.

    An answer the endpoint reports as cut off at the token budget is "truncated" even if what arrived
    happens to parse: the caller's fix is a larger budget, and a half answer must not pass silently.
    """
    name, raw = request.prompt_name, completion.text
    if completion.finish_reason == "length":
        raise LLMOutputError(name, "truncated", f"stopped at max_tokens={request.max_tokens}", raw)
    if not completion.tool_called:
        problem: OutputProblem = "empty" if not raw.strip() else "no_tool_call"
        raise LLMOutputError(name, problem, f"expected a call of the {schema.__name__!r} function", raw)
    args = completion.tool_args
    if args is None:
        try:
            args = json.loads(raw)
        except json.JSONDecodeError as e:
            raise LLMOutputError(name, "invalid_json", str(e), raw) from None
    if not isinstance(args, dict):
        raise LLMOutputError(name, "invalid_json", f"expected a JSON object, got {type(args).__name__}", raw)
    try:
        return schema.model_validate(args)
    except ValidationError as e:
        detail = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}"
                           for err in e.errors())
        raise LLMOutputError(name, "schema", detail, raw) from None


def parse_text(request: Request, completion: Completion) -> str:
    """Accept a free-text completion unless it was cut off or empty."""
    if completion.finish_reason == "length":
        raise LLMOutputError(
            request.prompt_name, "truncated", f"stopped at max_tokens={request.max_tokens}", completion.text
        )
    if not completion.text.strip():
        raise LLMOutputError(request.prompt_name, "empty", "the model returned no text", completion.text)
    return completion.text


class PromptedLLM:
    """Renders, caches, validates and logs around one `Completer`."""

    def __init__(
        self,
        completer: Completer,
        *,
        prompts: PromptLibrary | None = None,
        cache: ResponseCache | None = None,
        call_log: CallLog | None = None,
    ) -> None:
        self.completer = completer
        self.prompts = prompts if prompts is not None else PromptLibrary()
        self.cache = cache
        self.call_log = call_log
        self.backend = completer.backend

    @property
    def supports_images(self) -> bool:
        """Whether the wrapped backend accepts images."""
        return self.completer.supports_images

    def structured(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        schema: type[M],
        *,
        images: Sequence[ImageInput] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> M:
        """See `LLM.structured`."""
        request = self._request(prompt_name, variables, images, schema, max_tokens)
        return self._call(request, lambda c: parse_structured(request, c, schema))

    def text(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        *,
        images: Sequence[ImageInput] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:
        """See `LLM.text`."""
        request = self._request(prompt_name, variables, images, None, max_tokens)
        return self._call(request, lambda c: parse_text(request, c))

    def close(self) -> None:
        """Close the backend (and the cache's connection)."""
        self.completer.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> PromptedLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        images: Sequence[ImageInput] | None,
        schema: type[BaseModel] | None,
        max_tokens: int,
    ) -> Request:
        if images and not self.supports_images:
            raise LLMUnsupportedError(
                f"backend {self.backend!r} ({self.completer.identity.get('model')}) does not accept images;"
                " check `llm.supports_images` before passing keyframes"
            )
        rendered = self.prompts.render(prompt_name, variables)
        return Request(
            prompt_name=prompt_name,
            system=rendered.system,
            user=rendered.user,
            images=tuple(image_bytes(i) for i in images or ()),
            schema=schema,
            max_tokens=max_tokens,
        )

    def cache_key(self, request: Request) -> str:
        """Backend identity + request content + token budget: equal keys mean an equal answer."""
        payload = {"backend": self.completer.identity, "content": request.content_key(),
                   "max_tokens": request.max_tokens}
        return sha256_hex(json.dumps(payload, sort_keys=True, default=str))

    def _call(self, request: Request, parse: Callable[[Completion], T]) -> T:
        key = self.cache_key(request)
        start = time.perf_counter()
        completion = self.cache.get(key) if self.cache is not None else None
        hit = completion is not None
        try:
            if completion is None:
                completion = self.completer.complete(request)
            result = parse(completion)
        except LLMError as e:
            self._log(request, hit, start, completion, error=getattr(e, "problem", type(e).__name__))
            raise
        if not hit and self.cache is not None:
            self.cache.put(key, request.prompt_name, completion)
        self._log(request, hit, start, completion)
        return result

    def _log(self, request: Request, hit: bool, start: float, completion: Completion | None,
             error: str | None = None) -> None:
        if self.call_log is None:
            return
        self.call_log.append(CallRecord(
            prompt_name=request.prompt_name,
            prompt_hash=request.prompt_hash,
            backend=self.backend,
            model=str(self.completer.identity.get("model", "")),
            kind="text" if request.schema is None else "structured",
            cache_hit=hit,
            latency_s=round(time.perf_counter() - start, 4),
            tokens_in=completion.tokens_in if completion else None,
            tokens_out=completion.tokens_out if completion else None,
            tokens_evaluated=completion.tokens_evaluated if completion and not hit else None,
            ok=error is None,
            error=error,
            schema=request.schema.__name__ if request.schema else None,
            max_tokens=request.max_tokens,
        ), texts=call_texts(request, completion))


def call_texts(request: Request, completion: Completion | None) -> dict[str, str]:
    """What a person reads of one call, and what a benchmark replays: the system and user messages as sent
    (attached images by hash) and the answer as returned (tool-call arguments for structured calls)."""
    images = "".join(f"\n[image sha256 {sha256_hex(b)[:16]}]" for b in request.images)
    out = {"system": request.system, "user": request.user + images}
    if completion is not None:
        out["answer"] = completion.text
    return out
