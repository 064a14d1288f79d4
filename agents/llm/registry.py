"""The registry of LLM backends and `make_llm`, the one way the rest of CoDA gets an `LLM`.

    llm = make_llm("local", LocalConfig(n_threads=1), cache=ResponseCache(run / "llm_cache.sqlite"),
                   call_log=CallLog(run / "llm_calls.jsonl"))

Backends: `local` (embedded llama.cpp server, the default), `openai` (any OpenAI-compatible endpoint),
`replay` (recorded answers for tests; can record through `local`/`openai`). A typo gets "did you mean".
`--llm rules` is no backend: the loop then asks no LLM (the rules critic and template writers answer).
Configs are built by the caller (CLI/env parsing happens in `agents.run`, not here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.llm.base import LLM, Completer
from agents.llm.client import PromptedLLM
from agents.llm.local import LocalCompleter, LocalConfig
from agents.llm.openai_chat import OpenAICompleter, OpenAIConfig
from agents.llm.prompts import PromptLibrary
from agents.llm.recorded import ReplayCompleter
from agents.llm.store import CallLog, ResponseCache
from common.registry import Registry

DEFAULT_BACKEND = "local"


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """Recorded answers."""

    # the recordings file (JSON)
    path: Path
    # "replay": only recorded answers; "record": ask `record_backend` for unseen prompts and save them
    mode: Literal["replay", "record"] = "replay"
    # backend to record from ("local" or "openai"), record mode only
    record_backend: str = "local"
    # its config (None: its defaults; "openai" has none and needs one)
    record_config: Any = None


@dataclass(frozen=True)
class Backend:
    """A registry entry: the config type it takes and how to build it."""

    config_type: type
    build: Callable[..., LLM]
    doc: str


LLM_BACKENDS: Registry[Backend] = Registry("LLM backend")


def _completer(name: str, config: Any) -> Completer:
    if name == "local":
        return LocalCompleter(config or LocalConfig())
    if name == "openai":
        if not isinstance(config, OpenAIConfig):
            raise ValueError("the openai backend needs OpenAIConfig(base_url=..., model=..., api_key=...)")
        return OpenAICompleter(config)
    raise ValueError(f"cannot build a completer for backend {name!r} (record from 'local' or 'openai')")


def _build_prompted(name: str) -> Callable[..., LLM]:
    def build(config: Any, *, prompts: PromptLibrary | None, cache: ResponseCache | None,
              call_log: CallLog | None, **_: Any) -> LLM:
        if name == "replay":
            record = config.mode == "record"
            inner = _completer(config.record_backend, config.record_config) if record else None
            completer: Completer = ReplayCompleter(config.path, mode=config.mode, inner=inner)
        else:
            completer = _completer(name, config)
        return PromptedLLM(completer, prompts=prompts, cache=cache, call_log=call_log)

    return build


LLM_BACKENDS.register("local", Backend(LocalConfig, _build_prompted("local"),
                                       "embedded llama.cpp server with a GGUF model from PyPI (default)"))
LLM_BACKENDS.register("openai", Backend(OpenAIConfig, _build_prompted("openai"),
                                        "any OpenAI-compatible endpoint via ChatOpenAI"))
LLM_BACKENDS.register("replay", Backend(ReplayConfig, _build_prompted("replay"),
                                        "recorded answers (tests); records through local/openai"))


def make_llm(
    name: str = DEFAULT_BACKEND,
    config: Any = None,
    *,
    prompts: PromptLibrary | None = None,
    cache: ResponseCache | None = None,
    call_log: CallLog | None = None,
) -> LLM:
    """Build backend `name` with `config` (None: the backend's defaults, where it has them)."""
    entry = LLM_BACKENDS.get(name)
    if config is None:
        try:
            config = entry.config_type()
        except TypeError as e:
            raise ValueError(f"LLM backend {name!r} needs a {entry.config_type.__name__}: {e}") from None
    if not isinstance(config, entry.config_type):
        want, got = entry.config_type.__name__, type(config).__name__
        raise TypeError(f"LLM backend {name!r} takes a {want}, not a {got}")
    return entry.build(config, prompts=prompts, cache=cache, call_log=call_log)
