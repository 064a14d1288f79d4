"""Scripted critic, verifier and writers for graph tests (the `agents.graph.deps.Agents` protocol): a fixed
diagnosis ("the object's yaw, high side"), a fixed verdict after a real `run_batch` call, and template
writers built on `programs.edit`. Writers can be told to fail or to return a broken program first, so
the retry paths of the graph can be checked; every call is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.types import Diagnosis, Verdict
from programs.edits import edit
from programs.errors import ProgramRejected
from programs.model import TrainingProgram


class ScriptedAgents:
    """`Agents` whose answers are fixed by the test."""

    def __init__(self, *, status: str = "validated", factor: str = "obj_yaw",
                 band: tuple[float, float] = (0.3, 0.6), bad_programs: int = 0, writer_errors: int = 0,
                 bad_factor: str = "obj_x", bad_value: Any = 0.6) -> None:
        self.status, self.factor, self.band = status, factor, band
        self.bad_programs = bad_programs  # first n generation programs pin `bad_factor` to `bad_value`
        self.writer_errors = writer_errors  # first n generation-writer calls raise (an expected failure)
        self.bad_factor, self.bad_value = bad_factor, bad_value
        self.calls: list[tuple[str, Any]] = []
        self.generation_diagnoses: list[Any] = []  # the `diagnosis` each generation-writer call was given
        self.generation_examples: list[list[str]] = []  # the worked examples each call was shown

    def diagnose(self, episode: Any, program: Any, llm: Any, *, critic: str, episode_id: str,
                 feedback: str | None, peers: Any = ()) -> Diagnosis:
        self.calls.append(("diagnose", episode_id))
        return Diagnosis(episode_id=episode_id, factor_group="spatial", factor=self.factor,
                         phase=episode.failing_phase or "approach",
                         explanation=f"{self.factor} beyond what the policy handles",
                         edit={self.factor: self.band}, side="high", critic_id="scripted", confidence=0.9)

    def verify(self, diagnosis: Diagnosis, program: Any, run_batch: Any, *, n: int, alpha: float,
               rng: Any) -> Verdict:
        from agents.critic.verify import BatchItem

        targeted = edit(program, diagnosis.factor, diagnosis.edit[diagnosis.factor])
        items = [BatchItem(program=targeted, factors=targeted.default_factors(), seed=i, arm="targeted",
                           index=i) for i in range(n)]
        outcomes = run_batch(items)
        self.calls.append(("verify", [o.success for o in outcomes]))
        return Verdict(diagnosis_id=diagnosis.id, status=self.status, targeted_failure_rate=1.0,
                       control_failure_rate=0.0, statistic=1.0, p_value=0.01, n=n)

    def write_generation_program(self, mode: Any, base: Any, llm: Any, feedback: str | None, *,
                                 round_no: int, diagnosis: Any = None, examples: Any = ()) -> Any:
        self.calls.append(("write_generation", feedback))
        self.generation_examples.append(list(examples))
        self.generation_diagnoses.append(diagnosis)
        if self.writer_errors > 0:
            self.writer_errors -= 1
            raise ProgramRejected("scripted writer failure")
        if self.bad_programs > 0:
            self.bad_programs -= 1
            return edit(base, self.bad_factor, self.bad_value, mode_id=mode.id, round_no=round_no)
        return edit(base, mode.factor, self.band, mode_id=mode.id, round_no=round_no)

    def write_training_program(self, diagnosis: Any, base: TrainingProgram, llm: Any, *, mode_id: str,
                               round_no: int, demos: Sequence[Any], feedback: str | None) -> TrainingProgram:
        self.calls.append(("write_training", len(demos)))
        return TrainingProgram.model_validate({**base.model_dump(exclude={"id"}), "mode_id": mode_id,
                                               "round": round_no, "parent_id": base.id,
                                               "diagnosis": diagnosis.text()})
