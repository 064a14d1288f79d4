"""The contract every LLM backend is held to: the three prompts the loop sends, with the variables, schemas
and validation the loop uses — the critic (`critic_hybrid` → `DiagnosisOut` with the failure's candidates as
its factor enum, read by `critic_answer`), the generation writer (`writer_generation` → `GenerationOut`
with the program's factors as its enum, the program applied and checked) and the training writer
(`writer_stage` → `StageOut`, one subgoal inserted into the family's program, checked).

Their input is one real failure (`CONTRACT_CASE`: a counterfactual case of `bench.agents.critic_truth`, cause
known) and the diagnosis the rules critic makes of it. "valid" means the loop would use the answer; "right"
means the critic named the known cause, and a training program differs from the seed's.
`tests/agents/test_llm_contract.py` runs them against every backend; `python -m bench.agents.llm` times them
on the embedded models.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

CONTRACT_CASE = Path(__file__).with_name("contract_case.json")


@dataclass(frozen=True, kw_only=True)
class Case:
    """One prompt the loop sends, its variables, and how the loop would judge the answer."""

    name: str
    prompt: str
    variables: Mapping[str, Any]
    schema: type[BaseModel]
    max_tokens: int
    valid: Callable[[Any], bool]  # the loop would use it
    right: Callable[[Any], bool]  # and it is right (the known cause; a program that is not the seed's)


@cache
def contract_inputs() -> dict[str, Any]:
    """The recorded failure's summary (with its peers), program, config, the rules critic's diagnosis and
    the mode it founds — everything the three prompts are built from."""
    from agents.config import CriticConfig
    from agents.critic.diagnose import rules_diagnosis
    from agents.critic.summary import FailureSummary
    from memory.store import found_mode
    from programs.seeds import seed_library

    data = json.loads(CONTRACT_CASE.read_text())
    sm = FailureSummary.model_validate(data["summary"])
    gen, train = seed_library()[sm.family]
    config = CriticConfig(allow_ood=True, ood_context=True)
    dx = rules_diagnosis(sm, gen, config)
    return {"summary": sm, "cause": data["cause"], "generation": gen, "training": train, "config": config,
            "diagnosis": dx, "mode": found_mode(dx, sm.family, 1)}


def _usable(check: Callable[[Any], Any]) -> Callable[[Any], bool]:
    from agents.llm.base import LLMOutputError

    def valid(answer: Any) -> bool:
        try:
            check(answer)
        except LLMOutputError:
            return False
        return True

    return valid


def _critic_case() -> Case:
    from agents.critic.diagnose import critic_answer, critic_request

    c = contract_inputs()
    request = critic_request(c["summary"], c["generation"], c["config"])  # the loop's default: hybrid

    def use(out: Any) -> Any:
        return critic_answer(out, request, c["summary"], c["generation"], c["config"], "bench")

    def right(out: Any) -> bool:
        return use(out).factor == c["cause"]

    return Case(name="critic", prompt=request.prompt, schema=request.schema, max_tokens=request.max_tokens,
                variables=request.variables, valid=_usable(use), right=right)


def _generation_case() -> Case:
    from agents.config import WriterConfig
    from agents.writers.generation import (
        GEN_PROMPT,
        answer_to_program,
        generation_schema,
        generation_variables,
    )

    c, config = contract_inputs(), WriterConfig(allow_ood=True)
    mode, dx, base = c["mode"], c["diagnosis"], c["generation"]

    def use(out: Any) -> Any:
        return answer_to_program(out, mode, base, diagnosis=dx, round_no=1, config=config)

    return Case(name="generation_writer", prompt=GEN_PROMPT,
                schema=generation_schema([f.name for f in base.factors], config.allow_source),
                max_tokens=config.max_tokens_edit, variables=generation_variables(mode, base, dx, config),
                valid=_usable(use), right=_usable(use))


def _training_case() -> Case:
    from agents.config import WriterConfig
    from agents.writers.answers import stage_schema
    from agents.writers.training import TRAIN_PROMPT_STAGE, stage_program, stage_variables

    c, config = contract_inputs(), WriterConfig()  # the loop's default form: one subgoal inserted
    base, dx = c["training"], c["diagnosis"]
    meta = {"parent_id": base.id, "mode_id": c["mode"].id, "round": 1, "diagnosis": dx.text(),
            "phase": dx.phase}

    def use(out: Any) -> Any:
        return stage_program(out, base, meta)

    def stages(tp: Any) -> list[tuple[str, str]]:
        return [(g.done, g.progress) for g in tp.subgoals]

    def new(out: Any) -> bool:  # asked of valid answers only (`run_case`)
        return stages(use(out)) != stages(base)

    variables = stage_variables(base, dx)
    return Case(name="training_writer", prompt=TRAIN_PROMPT_STAGE,
                schema=stage_schema(base, variables["before"]), max_tokens=config.max_tokens_stage,
                variables=variables, valid=_usable(use), right=new)


@cache
def cases() -> tuple[Case, ...]:
    """The critic, generation-writer and training-writer cases, built from `CONTRACT_CASE`."""
    return (_critic_case(), _generation_case(), _training_case())
