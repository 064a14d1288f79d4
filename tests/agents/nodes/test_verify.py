"""`verify`: every unverified diagnosis gets a verdict from a targeted batch run on the family's seed
distribution, written into its file."""

from __future__ import annotations

from agents.graph.nodes.diagnose import verify
from agents.graph.rundir import read_json
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
