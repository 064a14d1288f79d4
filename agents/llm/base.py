"""The LLM contract every backend honours, the request/completion records that flow beneath it, and the
typed errors the graph reacts to.

Two layers: an `LLM` (what nodes call: a prompt name, variables, a pydantic schema) and a `Completer`
(what a backend implements: rendered messages in, raw text or tool arguments out). `PromptedLLM`
(`agents.llm.client`) joins them and adds rendering, caching, validation and the call log, so a new
backend only has to move text.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from agents.llm.untrusted import summarise_errors

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_TOKENS = 512  # generous for a structured diagnosis; callers raise it for program text

ImageInput = bytes | Path  # PNG bytes, or a path to a PNG file


class LLMError(RuntimeError):
    """Base class of everything this package raises on purpose."""


class LLMBackendError(LLMError):
    """The backend could not answer at all (endpoint down, server crashed, model missing)."""


class LLMUnsupportedError(LLMError):
    """The backend cannot do what was asked (images on a text-only model)."""


OutputProblem = Literal["no_tool_call", "invalid_json", "schema", "truncated", "empty"]


class LLMOutputError(LLMError):
    """The model answered, but not usably: malformed, truncated or schema-violating output.

    Carries the raw text so the caller can feed it back ("your last answer ... failed because ...").
    """

    def __init__(self, prompt_name: str, problem: OutputProblem, detail: str, raw: str) -> None:
        self.prompt_name = prompt_name
        self.problem = problem
        self.detail = detail
        self.raw = raw
        super().__init__(f"prompt {prompt_name!r}: {problem}: {detail} (raw output: {_clip(raw, 300)!r})")

    def feedback(self) -> str:
        """A message to append to the next attempt's prompt."""
        return (
            f"Your previous answer could not be used ({self.problem}: {summarise_errors(self.detail)}).\n"
            f"Previous answer:\n{_clip(self.raw, 2000)}\nAnswer again, following the schema exactly."
        )


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more chars]"


def sha256_hex(data: str | bytes) -> str:
    """Hex sha256 of text (UTF-8) or bytes."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def image_bytes(image: ImageInput) -> bytes:
    """The PNG bytes of an image given as bytes or a path."""
    return image if isinstance(image, bytes) else Path(image).read_bytes()


def png_data_url(png: bytes) -> str:
    """A base64 `data:` URL, the form OpenAI-compatible endpoints accept for inline images."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


@dataclass(frozen=True, kw_only=True)
class Request:
    """One rendered call, as a backend sees it."""

    # template name, for logs and error messages
    prompt_name: str
    # system message ("" = none)
    system: str
    # user message
    user: str
    # PNG bytes attached to the user message
    images: tuple[bytes, ...] = ()
    # pydantic model the answer must satisfy; None = free text
    schema: type[BaseModel] | None = None
    # upper bound on generated tokens
    max_tokens: int = DEFAULT_MAX_TOKENS

    @property
    def prompt_hash(self) -> str:
        """Short hash of the rendered text, the id a person greps the call log for."""
        return sha256_hex(self.system + "\x00" + self.user)[:16]

    def content_key(self) -> str:
        """Hash of everything that determines the answer except the backend: the replay key."""
        payload = {
            "system": self.system,
            "user": self.user,
            "images": [sha256_hex(b) for b in self.images],
            "schema": schema_json(self.schema),
        }
        return sha256_hex(json.dumps(payload, sort_keys=True))


def schema_json(schema: type[BaseModel] | None) -> dict[str, Any] | None:
    """The JSON schema of a pydantic model (None for free text), stable across runs."""
    return None if schema is None else schema.model_json_schema()


@dataclass(frozen=True, kw_only=True)
class Completion:
    """What a backend returned, before validation."""

    # the text content, or for structured calls the tool-call arguments as JSON text
    text: str
    # tool-call arguments as parsed by the client (None: none, or not valid JSON)
    tool_args: dict[str, Any] | None = None
    # True when the model answered with a tool call (structured calls)
    tool_called: bool = False
    # "stop", "length", "tool_calls", ... as the endpoint reports it ("" if unknown)
    finish_reason: str = ""
    # prompt tokens, if the endpoint reports them
    tokens_in: int | None = None
    # generated tokens, if the endpoint reports them
    tokens_out: int | None = None
    # prompt tokens the server actually evaluated (the rest came from its KV or prompt cache), where the
    # server reports them (the local backend reads its server's log)
    tokens_evaluated: int | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form, for the cache and replay files."""
        return {
            "text": self.text,
            "tool_args": self.tool_args,
            "tool_called": self.tool_called,
            "finish_reason": self.finish_reason,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_evaluated": self.tokens_evaluated,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Completion:
        """Inverse of `to_json`."""
        return cls(
            text=d.get("text") or "",
            tool_args=d.get("tool_args"),
            tool_called=bool(d.get("tool_called")),
            finish_reason=d.get("finish_reason") or "",
            tokens_in=d.get("tokens_in"),
            tokens_out=d.get("tokens_out"),
            tokens_evaluated=d.get("tokens_evaluated"),
        )


@runtime_checkable
class Completer(Protocol):
    """A backend's single duty: turn a rendered request into a raw completion."""

    backend: str  # registry name, for logs

    @property
    def identity(self) -> dict[str, Any]:
        """What besides the request determines the answer (backend, model, temperature, ...): cache key."""
        ...

    @property
    def supports_images(self) -> bool:
        """Whether the model accepts image inputs."""
        ...

    def complete(self, request: Request) -> Completion:
        """Answer one request; raise `LLMBackendError` when the backend cannot answer."""
        ...

    def close(self) -> None:
        """Release processes and connections; safe to call twice."""
        ...


@runtime_checkable
class LLM(Protocol):
    """What graph nodes call. Every backend in `LLM_BACKENDS` returns one of these."""

    backend: str

    @property
    def supports_images(self) -> bool:
        """Whether `images=` may be passed."""
        ...

    def structured(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        schema: type[M],
        *,
        images: Sequence[ImageInput] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> M:
        """Render `prompt_name` with `variables`, return an instance of `schema` or raise `LLMOutputError`."""
        ...

    def text(
        self,
        prompt_name: str,
        variables: Mapping[str, Any],
        *,
        images: Sequence[ImageInput] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:
        """Render `prompt_name` with `variables`, return free text or raise `LLMOutputError` if truncated."""
        ...

    def close(self) -> None:
        """Release the backend (stops a local server); safe to call twice."""
        ...


@dataclass(frozen=True, kw_only=True)
class CallRecord:
    """One line of the JSONL call log."""

    prompt_name: str
    prompt_hash: str
    backend: str
    model: str
    kind: Literal["structured", "text"]
    cache_hit: bool
    latency_s: float
    tokens_in: int | None = None
    tokens_out: int | None = None
    # prompt tokens the server evaluated for this call (None: not reported, or answered from the cache)
    tokens_evaluated: int | None = None
    ok: bool = True
    error: str | None = None  # LLMOutputError problem or exception type when not ok
    schema: str | None = None  # schema class name for structured calls
    max_tokens: int | None = None  # the call's answer budget (a benchmark replays it)
    extra: dict[str, Any] = field(default_factory=dict)  # free-form context a caller adds
