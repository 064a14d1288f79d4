"""Benchmarks, apart from product code:

- `python -m bench.agents.critic` — the rules critic on handicapped experts (pick-place);
- `python -m bench.agents.critic_truth` — every critic against counterfactual ground truth, four families;
- `python -m bench.agents.writers` — the generation and training writers on the loop's own diagnoses;
- `python -m bench.agents.llm` — the embedded models on the agents' structured calls;
- `python -m bench.agents.prompt_cache` — recorded prompts with and without the server's prompt cache.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def local_model_argument(ap: argparse.ArgumentParser, role: str) -> None:
    """`--local-model`, the embedded model of `role` (e.g. "--critics local"), read by `bench_llm`."""
    ap.add_argument("--local-model", default=None,
                    help=f"the embedded model of {role} (a name of agents/llm/models.toml; default the "
                         "default model)")


def bench_llm(kind: str, a: argparse.Namespace, log_dir: Path, cache: Any = None) -> Any:
    """The LLM a benchmark's `local` or `openai` agent speaks to, from its flags (`--threads`,
    `--local-model`; `--base-url`, `--model`, else $OPENAI_BASE_URL / $OPENAI_MODEL; the key from
    $OPENAI_API_KEY), its calls logged to `<log_dir>/llm_calls_<kind>.jsonl`; with `cache` (a
    `ResponseCache`) an answer already given is replayed (a resumed benchmark)."""
    import os

    from agents.llm import CallLog, LocalConfig, OpenAIConfig, make_llm

    if kind == "local":
        model = getattr(a, "local_model", None)
        conf: Any = LocalConfig(n_threads=a.threads, structured=getattr(a, "local_structured", "grammar"),
                                **({"model": model} if model else {}))
    else:
        conf = OpenAIConfig(base_url=a.base_url or os.environ.get("OPENAI_BASE_URL", ""),
                            model=a.model or os.environ.get("OPENAI_MODEL", ""),
                            api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    return make_llm(kind, conf, cache=cache, call_log=CallLog(log_dir / f"llm_calls_{kind}.jsonl"))
