"""Measure the embedded models on the product's own prompts: latency, and whether each answer is usable.

    python -m bench.agents.llm                                  # every local model, 2 threads
    python -m bench.agents.llm --models qwen2.5-coder-1.5b --threads 1
    python -m bench.agents.llm --models qwen2.5-coder-1.5b --threads 1 --no-extra-buffers
        --record tests/agents/fixtures/llm_replay.json    # (one line) the contract tests' fixture
    python -m bench.agents.llm --save-case runs/ct2/cases --case-index 19 # CONTRACT_CASE from a critic case

The cases are the LLM contract's (`agents.llm.contract.cases()`): the three prompts the loop sends, with the
variables, schemas and validation the loop uses, on one real failure with a known cause. They are also the
contract cases of `tests/agents/test_llm_contract.py`; `--record` writes the replay fixture those tests use.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from agents.llm.base import Completer, LLMError
from agents.llm.client import PromptedLLM
from agents.llm.contract import CONTRACT_CASE, Case, cases
from agents.llm.gguf import MODELS
from agents.llm.local import LocalCompleter, LocalConfig
from agents.llm.recorded import ReplayCompleter
from agents.llm.store import CallLog
from common.cli import comma_list


def save_case(folder: Path, index: int, out: Path = CONTRACT_CASE) -> None:
    """Write case `index` of a saved `bench.agents.critic_truth` case folder as the contract case: the
    failure's summary with its peers, and the factor whose move alone fixed it."""
    from agents.critic.summary import summarize_failure, with_peers
    from bench.agents.critic_truth import load_cases
    from programs.seeds import seed_library

    cases, _ = load_cases(folder)
    case = cases[index]
    gen = seed_library()[case.family][0]
    sm = with_peers(summarize_failure(case.episode, episode_id=f"contract_{case.family}", schema=gen.factors),
                    case.peers)
    out.write_text(json.dumps({"source": f"{folder} case {index} (seed {case.seed})", "cause": case.factor,
                               "summary": sm.model_dump(mode="json")}, indent=1) + "\n")


def run_case(llm: PromptedLLM, case: Case) -> dict[str, Any]:
    """Ask one case; the outcome with latency and token counts."""
    start = time.perf_counter()
    try:
        answer: Any = llm.structured(case.prompt, case.variables, case.schema, max_tokens=case.max_tokens)
        error = None
    except LLMError as e:
        answer, error = None, str(e)[:300]
    latency = round(time.perf_counter() - start, 2)
    row: dict[str, Any] = {"case": case.name, "latency_s": latency, "error": error}
    row["parsed"] = answer is not None
    row["valid"] = bool(answer is not None and case.valid(answer))
    row["right"] = bool(row["valid"] and case.right(answer))
    row["answer"] = answer.model_dump() if answer is not None else None
    return row


def bench_model(model: str, threads: int, record: Path | None,
                extra_buffers: bool | None = None) -> list[dict[str, Any]]:
    """Start the model's server, run every case once (no cache), stop it."""
    local = LocalCompleter(LocalConfig(model=model, n_threads=threads, extra_buffers=extra_buffers))
    t0 = time.perf_counter()
    local.start()
    startup = round(time.perf_counter() - t0, 1)
    completer: Completer = ReplayCompleter(record, mode="record", inner=local) if record else local
    log = CallLog(Path(tempfile.mkdtemp(prefix="coda-llm-bench-")) / "calls.jsonl")
    rows = []
    with PromptedLLM(completer, call_log=log) as llm:
        for case in cases():
            row = {"model": model, "threads": threads, "startup_s": startup, **run_case(llm, case)}
            last = log.read()[-1]
            row.update(tokens_in=last["tokens_in"], tokens_out=last["tokens_out"])
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    """CLI: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=comma_list(choices=list(MODELS)), default=list(MODELS),
                    help=f"comma-separated local models (default all: {','.join(MODELS)})")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    ap.add_argument("--record", type=Path, help="write answers of the first model to this replay file")
    ap.add_argument("--no-extra-buffers", action="store_true", help="see LocalConfig.extra_buffers")
    ap.add_argument("--save-case", type=Path, metavar="CASES",
                    help="write case --case-index of an bench.agents.critic_truth --save-cases folder as the "
                         f"contract case ({CONTRACT_CASE.name}) and stop")
    ap.add_argument("--case-index", type=int, default=0, metavar="K", help="the case --save-case takes")
    args = ap.parse_args(argv)
    if args.save_case:
        save_case(args.save_case, args.case_index)
        print(f"wrote {CONTRACT_CASE}")
        return
    rows = []
    for i, model in enumerate(args.models):
        extra = False if args.no_extra_buffers else None
        rows += bench_model(model, args.threads, args.record if i == 0 else None, extra)
    print(f"\n{'model':<22}{'case':<20}{'latency s':>10}{'tok out':>8}  valid right")
    for r in rows:
        print(f"{r['model']:<22}{r['case']:<20}{r['latency_s']:>10.1f}{r['tokens_out'] or 0:>8}"
              f"  {r['valid']!s:<5} {r['right']!s}")


if __name__ == "__main__":
    main()
