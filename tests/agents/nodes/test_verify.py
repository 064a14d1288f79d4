"""`verify`: every unverified diagnosis gets a verdict from a targeted batch run on the family's seed
distribution (or the run's domain-randomization background), written into its file."""

from __future__ import annotations

from agents.graph.nodes.diagnose import verify
from agents.graph.rundir import read_json, write_json
from tests.agents.graphkit import call
from tests.fakes.agents import ScriptedAgents


def test_each_diagnosis_gets_a_verdict_on_the_seed_distribution(before) -> None:
    deps, state = before("verify")
    update = call(verify, state, deps)
    assert update == {"critic_failures": []}
    (rel,) = state["diagnoses"]
    rec = read_json(deps.run.root / rel)
    assert rec["verdict"]["status"] == "validated" and rec["verified_on"] == "seed"
    (batch,) = [outcomes for kind, outcomes in deps.agents.calls if kind == "verify"]
    assert len(batch) == deps.config.verify_n and deps.meter.episodes == deps.config.verify_n
    assert call(verify, state, deps) == update and len(deps.agents.calls) == 1  # verified once


def test_on_a_domain_randomization_background_the_diagnosis_is_verified_there(before) -> None:
    """`RunConfig.background` "dr": the targeted batch departs from domain randomization's program, the
    distribution the run's generated arms lie on, and the record says so."""
    from programs.seeds import background_program

    class Seen(ScriptedAgents):
        def verify(self, diagnosis, program, *args, **kwargs):
            self.programs = [*getattr(self, "programs", []), program]
            return super().verify(diagnosis, program, *args, **kwargs)

    deps, state = before("verify", agents=Seen(), background="dr")
    call(verify, state, deps)
    rec = read_json(deps.run.root / state["diagnoses"][0])
    assert rec["verified_on"] == "dr"
    assert deps.agents.programs == [background_program(rec["family"], "dr", deps.config.dr_widen)]
    assert deps.agents.programs[0] != background_program(rec["family"])


def test_a_verification_that_raises_is_reported_not_fatal(before) -> None:
    class NoControl(ScriptedAgents):
        def verify(self, *args, **kwargs):
            raise ValueError("no factor left for a control edit")

    deps, state = before("verify", agents=NoControl())
    update = call(verify, state, deps)
    (failure,) = update["critic_failures"]
    assert "verification failed: ValueError: no factor left" in failure
    assert read_json(deps.run.root / state["diagnoses"][0])["verdict"] is None


def test_with_verification_ablated_every_diagnosis_is_accepted_unverified(before) -> None:
    deps, state = before("verify", "coda_no_verify")
    assert call(verify, state, deps) == {"critic_failures": []}
    rec = read_json(deps.run.root / state["diagnoses"][0])
    v = rec["verdict"]
    assert v["status"] == "validated" and v["n"] == 0 and v["test"] == "none"
    assert "verification ablated" in v["reason"]
    assert not [c for c in deps.agents.calls if c[0] == "verify"] and deps.meter.episodes == 0


def test_a_diagnosis_verified_without_its_context_stands_without_it(before) -> None:
    """`VerifyConfig.at_ceiling="without_context"`: when the verdict says the context was dropped, the
    record's diagnosis becomes the factor's edit alone (what the writer recreates), the diagnosed edit
    kept beside it, and the verdict names that diagnosis."""
    from memory.types import Diagnosis

    class Dropped(ScriptedAgents):
        def verify(self, diagnosis, program, run_batch, **kw):
            v = super().verify(diagnosis, program, run_batch, **kw)
            alone = diagnosis.without_context()
            return v.model_copy(update={"context_dropped": True, "diagnosis_id": alone.id})

    deps, state = before("verify", agents=Dropped())
    path = deps.run.root / state["diagnoses"][0]
    rec = read_json(path)
    dx = Diagnosis.model_validate(rec["diagnosis"])
    held = dx.model_copy(update={"edit": {**dx.edit, "color": "purple"}})  # the failing scene's context
    write_json(path, {**rec, "diagnosis": held.model_dump(mode="json")})
    call(verify, state, deps)
    rec = read_json(path)
    assert rec["diagnosed_edit"] == held.model_dump(mode="json")["edit"]
    assert list(rec["diagnosis"]["edit"]) == [dx.factor]
    assert Diagnosis.model_validate(rec["diagnosis"]).id == rec["verdict"]["diagnosis_id"]
    assert rec["verdict"]["context_dropped"]
