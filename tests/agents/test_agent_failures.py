"""Errors that name themselves, one retry budget, and fallbacks that are counted: an expected agent failure
(`ProgramRejected`, `LLMOutputError`, ...) is retried at most `max_retries` times with the error fed back,
then reported or back-filled from the seed program — and counted in metrics.jsonl; any other exception
out of an agent stops the run, naming the node and the slot or episode."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from agents.graph.deps import open_deps
from agents.graph.rundir import read_metrics
from agents.writers.generation import resolve_factor
from programs.errors import ProgramRejected
from programs.factor_space import back_off, side_edit
from programs.seeds import seed_library
from tests.agents.graphkit import accepted_per_family, config, run_graph
from tests.fakes.agents import ScriptedAgents
from tests.fakes.trainer import FakeTrainer

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

ALWAYS_FAILS = -1.0  # yaw limit of the fake policy: every rollout fails, so the critic has work
GEN = seed_library()["pick_place"][0]


@pytest.fixture
def deps_for(tmp_path: Path):
    stack = ExitStack()

    def make(agents: Any, method: str = "coda", **over: Any) -> Any:
        return stack.enter_context(open_deps(config(method, **over), tmp_path / method,
                                             trainer=FakeTrainer(ALWAYS_FAILS), agents=agents))

    yield make
    stack.close()


class SlotWriterBug(ScriptedAgents):
    """compile's generation writer fails as expected (so the mode reaches round 2 without a program), the
    slot's writer call then hits a bug."""

    def write_generation_program(self, mode, base, llm, feedback, *, round_no, diagnosis=None, examples=()):
        self.calls.append(("write_generation", feedback))
        if diagnosis is not None:
            raise ProgramRejected("no template for this mode")
        raise KeyError("a bug in the writer")


class CriticBug(ScriptedAgents):
    def diagnose(self, episode, program, llm, *, critic, episode_id, feedback, peers=()):
        raise AttributeError("a bug in the critic")


class RejectingCritic(ScriptedAgents):
    """The critic never has an answer; records the feedback each call was given."""

    def __init__(self) -> None:
        super().__init__()
        self.feedback: list[str | None] = []

    def diagnose(self, episode, program, llm, *, critic, episode_id, feedback, peers=()):
        self.feedback.append(feedback)
        raise ProgramRejected(f"no editable factor (call {len(self.feedback)})")


def _notes(e: BaseException) -> str:
    return "\n".join(getattr(e, "__notes__", []))


def test_an_unexpected_writer_exception_stops_the_run_naming_node_and_slot(deps_for) -> None:
    deps = deps_for(SlotWriterBug(), rounds=2, max_retries=1)
    with pytest.raises(KeyError, match="a bug in the writer") as info:
        run_graph(deps)
    notes = _notes(info.value)
    assert "node 'generate' of round 2" in notes
    assert "generate: slot " in notes and "|pick_place (attempt 1)" in notes
    rows = read_metrics(deps.run.root / "metrics.jsonl")
    assert [r["round"] for r in rows] == [0, 1]  # no back-filled round 2 was reported


def test_an_unexpected_critic_exception_stops_the_run_naming_the_episode(deps_for) -> None:
    with pytest.raises(AttributeError, match="a bug in the critic") as info:
        run_graph(deps_for(CriticBug(), max_retries=2))
    notes = _notes(info.value)
    assert "node 'diagnose' of round 1" in notes and "diagnose: episode episodes/round_01/" in notes


def test_the_critic_gets_one_loop_of_1_plus_k_calls_each_fed_the_previous_error(deps_for) -> None:
    agents = RejectingCritic()
    deps = deps_for(agents, max_retries=2)
    final = run_graph(deps)
    assert len(agents.feedback) == 1 + deps.config.max_retries  # the smoke preset diagnoses one episode
    assert agents.feedback[0] is None
    assert [fb for fb in agents.feedback[1:]] == [f"ProgramRejected: no editable factor (call {k})"
                                                  for k in (1, 2)]
    assert len(final["critic_failures"]) == 1
    row = read_metrics(deps.run.root / "metrics.jsonl")[-1]
    assert row["unusable_answers"] == {"critic": 1 + deps.config.max_retries, "writer": 0}


def test_an_expected_writer_failure_backfills_and_is_counted_in_metrics(deps_for) -> None:
    agents = ScriptedAgents(writer_errors=99)  # every generation-writer call raises ProgramRejected
    deps = deps_for(agents, rounds=2, max_retries=1)
    final = run_graph(deps)
    failed = [s for s in final["slots"] if s["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["failure"] == "writer" and "the writer failed" in failed[0]["error"]
    assert accepted_per_family(final["slots"]) == {"pick_place": deps.config.budget}  # back-filled
    rows = read_metrics(deps.run.root / "metrics.jsonl")
    assert rows[1]["fallbacks"] == {"slots": 0, "reasons": {"writer": 0, "checks": 0, "sandbox": 0,
                                                            "invalid_scenes": 0}, "training_programs": 0}
    assert rows[2]["fallbacks"] == {"slots": 1, "reasons": {"writer": 1, "checks": 0, "sandbox": 0,
                                                            "invalid_scenes": 0}, "training_programs": 0}
    writes = [c for c in agents.calls if c[0] == "write_generation"]
    assert sum(r["unusable_answers"]["writer"] for r in rows[1:]) == len(writes)  # every one unusable
    assert rows[1]["unusable_answers"]["writer"] == 1 + deps.config.max_retries  # compile's program
    assert "fallbacks" not in rows[0] and rows[2]["unusable_answers"]["critic"] == 0


def test_a_slot_whose_scenes_keep_failing_validation_is_counted_with_its_reason(deps_for) -> None:
    deps = deps_for(ScriptedAgents(bad_programs=99), rounds=2, max_retries=1)
    run_graph(deps)
    fb = read_metrics(deps.run.root / "metrics.jsonl")[-1]["fallbacks"]
    assert fb["slots"] == 1 and fb["reasons"]["invalid_scenes"] == 1 and fb["reasons"]["writer"] == 0


def test_the_rules_writer_and_critic_name_their_expected_failures() -> None:
    from agents.critic.diagnose import rules_diagnosis
    from agents.critic.summary import summarize_failure
    from tests.fakes.agents_fakes import yaw_grasp_failure

    with pytest.raises(ProgramRejected, match="has no factor 'weather'"):
        resolve_factor("weather", GEN)
    yaw = GEN.factor("obj_yaw")
    with pytest.raises(ProgramRejected, match="needs a diagnosis edit"):
        side_edit(yaw, None, (), band=0.25, allow_ood=False)
    with pytest.raises(ProgramRejected, match="nothing left to back off"):
        back_off(yaw, yaw)
    with pytest.raises(ProgramRejected, match="no allowed value"):
        side_edit(GEN.factor("color"), "high", ('"mauve"',), band=0.25, allow_ood=False)
    sm = summarize_failure(yaw_grasp_failure(), schema=GEN.factors)
    with pytest.raises(ProgramRejected, match="shares no editable factor"):  # no factor read in the scene
        rules_diagnosis(sm.model_copy(update={"factors": ()}), GEN)


def test_the_factor_probe_assumes_a_refused_value_matters_and_lets_bugs_through() -> None:
    from agents.critic.factors import Probe
    from tests.fakes.agents_fakes import pick_place_scene

    probe = Probe(pick_place_scene())
    assert probe.matters("size", {**probe.flat, "size": "big"})  # TypeError in make_scene: refused
    assert probe.matters("size", {**probe.flat, "size": -1.0})  # a ValidationError (ValueError): refused

    class Broken(probe.fam):  # type: ignore[misc, valid-type]
        @classmethod
        def make_scene(cls, factors, seed=0):
            raise RuntimeError("a bug in the family")

    probe.fam, probe._cache = Broken, {}
    with pytest.raises(RuntimeError, match="a bug in the family"):
        probe.matters("size")
