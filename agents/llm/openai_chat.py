"""The `openai` backend: langchain-openai `ChatOpenAI` against any OpenAI-compatible endpoint (a hosted
API, vLLM, llama.cpp's server). The `local` backend talks to its embedded server through this same class.

Structured calls use function calling (`with_structured_output(method="function_calling")`): llama.cpp
constrains the arguments with a grammar built from the schema, and hosted APIs support it everywhere,
whereas `json_schema` mode is not accepted by llama.cpp. The embedded server is asked differently
(`structured="grammar"`): `response_format={"type": "json_object", "schema": ...}`, which llama-cpp-python
turns into the same grammar without rendering the function's JSON schema into the prompt (~300 tokens
of a ~900-token critic prompt, and the part that changes with the family's factor names, so it also broke
the reuse of the evaluated prefix); the prompt itself says what each field is.

The token budget is sent in the request body as `max_tokens` because llama.cpp ignores
`max_completion_tokens`, which is what `ChatOpenAI(max_tokens=)` sends nowadays; without it a call can run
for minutes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from agents.llm.base import Completion, LLMBackendError, Request, png_data_url


@dataclass(frozen=True, kw_only=True)
class OpenAIConfig:
    """How to reach an OpenAI-compatible chat endpoint. Values come from the CLI/env of the caller."""

    # endpoint root including the version, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8080/v1"
    base_url: str
    # model name as the endpoint knows it
    model: str
    # API key ("unused" is fine for local servers that ignore it)
    api_key: str = "unused"
    # sampling temperature; 0 keeps reruns (and the cache) meaningful
    temperature: float = 0.0
    # sampling seed, passed where the endpoint honours it
    seed: int | None = 0
    # seconds before one HTTP request is abandoned
    timeout_s: float = 300.0
    # client-side retries on connection errors / 5xx (not on bad output: the graph retries those)
    max_retries: int = 1
    # whether the model accepts image inputs (keyframes for the critic)
    supports_images: bool = False
    # request field carrying the token budget: "max_tokens" (llama.cpp, vLLM, most APIs) or
    # "max_completion_tokens" (OpenAI reasoning models)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    # how a structured answer is asked for: "tools" (a forced function call; any endpoint) or "grammar"
    # (llama-cpp-python's `response_format` with a JSON schema: decoded under the schema's grammar, the
    # schema not shown to the model; the embedded server)
    structured: Literal["tools", "grammar"] = "tools"

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        if not self.model:
            raise ValueError("model must be named")


class OpenAICompleter:
    """`Completer` over ChatOpenAI."""

    backend = "openai"

    def __init__(self, config: OpenAIConfig, *, backend: str = "openai") -> None:
        from langchain_openai import ChatOpenAI  # heavy (seconds): imported when a backend is built, not
        # when agents.llm is imported, and not inside the first call's measured latency

        self._chat_type = ChatOpenAI
        self.config = config
        self.backend = backend
        self._chats: dict[int, Any] = {}  # one ChatOpenAI per token budget (the budget is in the body)

    @property
    def identity(self) -> dict[str, Any]:
        """Backend, endpoint, model and sampling settings: answers differ when any of these do."""
        c = self.config
        return {"backend": self.backend, "base_url": c.base_url, "model": c.model,
                "temperature": c.temperature, "seed": c.seed}

    @property
    def supports_images(self) -> bool:
        """As configured: the endpoint cannot be asked reliably."""
        return self.config.supports_images

    def complete(self, request: Request) -> Completion:
        """One chat completion; structured requests force a call of the schema's function."""
        import openai

        chat = self._chat(request.max_tokens)
        messages = self._messages(request)
        try:
            if request.schema is None:
                return _from_message(chat.invoke(messages), structured=False)
            if self.config.structured == "grammar":
                fmt = {"type": "json_object", "schema": request.schema.model_json_schema()}
                return _from_json_message(chat.bind(response_format=fmt).invoke(messages))
            runnable = chat.with_structured_output(request.schema, method="function_calling",
                                                   include_raw=True)
            return _from_message(runnable.invoke(messages)["raw"], structured=True)
        except openai.APIError as e:
            raise LLMBackendError(
                f"{self.backend} endpoint {self.config.base_url} (model {self.config.model!r}) failed on"
                f" prompt {request.prompt_name!r}: {type(e).__name__}: {e}"
            ) from e

    def close(self) -> None:
        """Nothing to release: ChatOpenAI shares a pooled HTTP client."""
        self._chats.clear()

    def _chat(self, max_tokens: int) -> Any:
        chat = self._chats.get(max_tokens)
        if chat is None:
            c = self.config
            chat = self._chat_type(
                model=c.model,
                base_url=c.base_url,
                api_key=c.api_key,
                temperature=c.temperature,
                seed=c.seed,
                timeout=c.timeout_s,
                max_retries=c.max_retries,
                extra_body={c.max_tokens_field: max_tokens},
            )
            self._chats[max_tokens] = chat
        return chat

    @staticmethod
    def _messages(request: Request) -> list[Any]:
        from langchain_core.messages import HumanMessage, SystemMessage

        messages: list[Any] = [SystemMessage(content=request.system)] if request.system else []
        if request.images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": request.user}]
            parts += [{"type": "image_url", "image_url": {"url": png_data_url(b)}} for b in request.images]
            messages.append(HumanMessage(content=parts))
        else:
            messages.append(HumanMessage(content=request.user))
        return messages


def _from_json_message(message: Any) -> Completion:
    """A `Completion` from an answer decoded under a JSON-schema grammar: the content is the object (the
    structured channel, as a function call's arguments are); text that does not parse is kept raw."""
    done = _from_message(message, structured=False)
    try:
        args = json.loads(done.text)
    except json.JSONDecodeError:
        args = None
    return dataclasses.replace(done, tool_args=args if isinstance(args, dict) else None, tool_called=True)


def _from_message(message: Any, *, structured: bool) -> Completion:
    """A `Completion` from a langchain `AIMessage`: tool-call arguments for structured calls, else text."""
    usage = getattr(message, "usage_metadata", None) or {}
    meta = getattr(message, "response_metadata", None) or {}
    common = {
        "finish_reason": str(meta.get("finish_reason") or ""),
        "tokens_in": usage.get("input_tokens"),
        "tokens_out": usage.get("output_tokens"),
    }
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    if not structured:
        return Completion(text=content, **common)
    if message.tool_calls:
        args = message.tool_calls[0]["args"]
        return Completion(text=json.dumps(args), tool_args=args, tool_called=True, **common)
    if message.invalid_tool_calls:  # arguments that are not valid JSON: keep the raw string
        raw = message.invalid_tool_calls[0].get("args") or ""
        return Completion(text=raw, tool_called=True, **common)
    return Completion(text=content, **common)
