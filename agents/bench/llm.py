"""Measure the embedded models on CoDA's kind of prompts: latency, and whether each answer is usable.

    python -m agents.bench.llm                                  # every local model, 2 threads
    python -m agents.bench.llm --models qwen2.5-coder-1.5b --threads 1
    python -m agents.bench.llm --models qwen2.5-coder-1.5b --threads 1 --no-extra-buffers
        --record tests/agents/fixtures/llm_replay.json    # (one line) the contract tests' fixture

The cases (`CASES`) are also the contract cases of `tests/agents/test_llm_contract.py`; `--record` writes
the replay fixture those tests use. "valid" means the answer parsed into the schema and passed the case's
own checks (names from the prompt, expressions that parse in the training-program language); "right"
means it also named the cause planted in the summary.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agents.llm.base import Completer, LLMError
from agents.llm.client import PromptedLLM
from agents.llm.gguf import MODELS
from agents.llm.local import LocalCompleter, LocalConfig
from agents.llm.recorded import ReplayCompleter
from agents.llm.store import CallLog
from common.cli import comma_list


class FailureDiagnosis(BaseModel):
    """The critic's answer: why, in which phase, and which factor.

    The explanation comes first on purpose: a grammar-constrained model writes fields in schema order,
    so it reasons before it commits to a name (measured: with `factor` first, the 1.5B model named the
    first listed factor and phase every time).
    """

    explanation: str = Field(description="one or two sentences citing the numbers")
    phase: str = Field(description="phase in which the attempt failed")
    factor: str = Field(description="name of the scene factor that caused the failure")


class SubgoalSpec(BaseModel):
    """One stage of a training program."""

    name: str = Field(description="short snake_case name")
    done: str = Field(description="boolean expression: the stage is complete")
    progress: str = Field(description="numeric expression in [0, 1]: progress within the stage")


class SubgoalList(BaseModel):
    """A training program's ordered stages."""

    subgoals: list[SubgoalSpec] = Field(min_length=1, max_length=8)


FACTORS = [
    {"name": "object_width", "value": 0.078, "range": "0.02-0.08 m"},
    {"name": "object_mass", "value": 0.2, "range": "0.05-0.5 kg"},
    {"name": "target_distance", "value": 0.25, "range": "0.1-0.4 m"},
    {"name": "table_friction", "value": 1.0, "range": "0.5-1.5"},
]
PHASES = ["reach", "grasp", "lift", "carry", "place"]
FUNCTIONS = [
    "on(a, b) -> bool: a rests on b, released", "grasped(a) -> bool: both finger pads touch a",
    "lifted(a, h) -> bool: bottom of a at least h above the table", "dist(a, b) -> num: distance (m)",
    "xy_dist(a, b) -> num: horizontal distance (m)", "bottom(a) -> num", "top(a) -> num",
    "gripper() -> num: finger opening, 0 closed ... 0.08 open", "clip(v, lo, hi) -> num",
]
DIAGNOSE_GRASP = {
    "family": "pick_place", "instruction": "put the red box on the plate",
    "factors": FACTORS, "phases": PHASES,
    "summary": ("t=0.0-1.9 s reach: grip site reached the box (dist 0.012 m). t=1.9-2.6 s grasp: the fingers"
                " closed from 0.080 m to 0.077 m and stopped; only the left pad touched the box (box width"
                " 0.078 m, gripper maximum opening 0.080 m). t=2.6-6.0 s lift: the box stayed on the table"
                " (bottom 0.000 m), grasped=false. Episode ended without success."),
}
DIAGNOSE_CARRY = {
    "family": "pick_place", "instruction": "put the red box on the plate",
    "factors": [{**FACTORS[0], "value": 0.04}, FACTORS[1], {**FACTORS[2], "value": 0.39}, FACTORS[3]],
    "phases": PHASES,
    "summary": ("t=0.0-3.1 s reach, grasp and lift succeeded: box grasped and lifted to 0.06 m. t=3.1-8.0 s"
                " carry: the arm stretched toward the plate 0.39 m away and stalled at its joint limits; the"
                " box stayed 0.11 m short of the plate (xy_dist 0.11 m), still grasped. Time ran out."),
}
SUBGOALS = {
    "family": "pick_place", "instruction": "put the red box on the plate",
    "roles": {"object": "box", "target": "plate"}, "functions": FUNCTIONS, "diagnosis": None,
}
SUMMARY = {
    "family": "pick_place",
    "diagnoses": ["grasp fails: box width 0.078 m is at the gripper's 0.080 m maximum opening",
                  "grasp fails: box width 0.075 m leaves 5 mm of clearance; a single pad touches"],
}


@dataclass(frozen=True, kw_only=True)
class Case:
    """One benchmark/contract prompt and how to judge the answer."""

    name: str
    prompt: str
    variables: Mapping[str, Any]
    schema: type[BaseModel] | None  # None: free text
    max_tokens: int
    valid: Callable[[Any], bool]  # usable beyond parsing
    right: Callable[[Any], bool]  # names the planted cause (or: valid, where nothing is planted)


def _expressions_ok(answer: SubgoalList) -> bool:
    from programs.expr import ExprError, parse  # the real training-program language checker

    try:
        for sg in answer.subgoals:
            parse(sg.done, expect="bool", roles=("object", "target"))
            parse(sg.progress, expect="num", roles=("object", "target"))
    except ExprError:
        return False
    return "on(" in answer.subgoals[-1].done.replace(" ", "")


def _diag_valid(d: FailureDiagnosis) -> bool:
    return d.factor in {f["name"] for f in FACTORS} and d.phase in PHASES and bool(d.explanation.strip())


CASES: tuple[Case, ...] = (
    Case(name="diagnose_grasp", prompt="diagnose_failure", variables=DIAGNOSE_GRASP, schema=FailureDiagnosis,
         max_tokens=200, valid=_diag_valid, right=lambda d: (d.factor, d.phase) == ("object_width", "grasp")),
    Case(name="diagnose_carry", prompt="diagnose_failure", variables=DIAGNOSE_CARRY, schema=FailureDiagnosis,
         max_tokens=200, valid=_diag_valid,
         right=lambda d: (d.factor, d.phase) == ("target_distance", "carry")),
    Case(name="training_subgoals", prompt="training_subgoals", variables=SUBGOALS, schema=SubgoalList,
         max_tokens=600, valid=lambda a: 3 <= len(a.subgoals) <= 6, right=_expressions_ok),
    Case(name="summarize_mode", prompt="summarize_mode", variables=SUMMARY, schema=None, max_tokens=80,
         valid=lambda t: 0 < len(t.split()) <= 40,
         right=lambda t: "grip" in t.lower() or "width" in t.lower()),
)


def run_case(llm: PromptedLLM, case: Case) -> dict[str, Any]:
    """Ask one case; the outcome with latency and token counts."""
    start = time.perf_counter()
    try:
        if case.schema is None:
            answer: Any = llm.text(case.prompt, case.variables, max_tokens=case.max_tokens)
        else:
            answer = llm.structured(case.prompt, case.variables, case.schema, max_tokens=case.max_tokens)
        error = None
    except LLMError as e:
        answer, error = None, str(e)[:300]
    latency = round(time.perf_counter() - start, 2)
    row: dict[str, Any] = {"case": case.name, "latency_s": latency, "error": error}
    row["parsed"] = answer is not None
    row["valid"] = bool(answer is not None and case.valid(answer))
    row["right"] = bool(row["valid"] and case.right(answer))
    row["answer"] = answer.model_dump() if isinstance(answer, BaseModel) else answer
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
        for case in CASES:
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
    args = ap.parse_args(argv)
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
