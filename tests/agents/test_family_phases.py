"""The phase contract: every registered family declares its phases (`TaskFamily.phase_table`), each with a
relevance row the rules critic reads and an emphasis the training writer knows; a phase a family does not
declare is an error for the critic, not a silent default."""

from __future__ import annotations

import pytest

from agents.critic.factors import read_factors
from agents.critic.rules import rank_factors, relevance
from agents.critic.summary import FailureSummary
from agents.writers.training import EMPHASIS, emphasise
from programs.seeds import seed_library
from sim.families import FAMILIES, get_family

NAMES = FAMILIES.names()
LIB = seed_library()
# every factor kind some registered family's factor has, in either factor space
KINDS = {f.kind for n in NAMES for f in get_family(n).schema("extended")}


@pytest.mark.parametrize("name", NAMES)
def test_a_family_declares_its_phases_in_one_table(name):
    fam = get_family(name)
    assert fam.phase_table, f"{name} declares no phases"
    assert fam.phases == (*(p.name for p in fam.phase_table), "done")
    assert set(fam.phase_stages) == set(fam.phases) - {"done"}
    assert fam.phase_def("done").relevance == {}  # the goal reached: no kind is more relevant


@pytest.mark.parametrize("name", NAMES)
def test_every_phase_has_a_relevance_row_over_known_kinds(name):
    fam = get_family(name)
    for phase in fam.phases[:-1]:
        row = relevance(name, phase)
        assert row, f"{name}: phase {phase!r} has no relevance row"
        assert set(row) <= KINDS, f"{name}/{phase}: unknown kinds {set(row) - KINDS}"
        assert all(0.0 < v <= 1.0 for v in row.values()), f"{name}/{phase}: {row}"


@pytest.mark.parametrize("name", NAMES)
def test_the_writer_knows_every_declared_emphasis_and_stages_the_seed_program_with_it(name):
    fam, tp = get_family(name), LIB[name][1]
    for phase in fam.phase_table:
        if phase.emphasis is None:
            assert emphasise(tp, phase.name) is None
            continue
        assert phase.emphasis in EMPHASIS, f"{name}/{phase.name}: the writer has no {phase.emphasis!r}"
        got = emphasise(tp, phase.name)
        assert got is not None, f"{name}/{phase.name}: {phase.emphasis!r} does not fit the seed program"
        k, sub = got
        stages = [g.name for g in tp.subgoals]
        covering = phase.stages or (stages[-1],)
        assert stages[k] in covering and sub.name not in stages


def test_a_phase_the_family_does_not_declare_is_an_error_for_the_critic():
    fam, gen = get_family("pick_place"), LIB["pick_place"][0]
    scene = fam.make_scene(fam.default_factors(), seed=1)
    sm = FailureSummary(episode_id="e", family="pick_place", instruction=scene.instruction, success=False,
                        failing_phase="slide", steps=1, timeline=(), subject="object", target="target",
                        failure_step=0, factors=read_factors(scene, gen.factors), scene=scene)
    with pytest.raises(KeyError, match="pick_place: no phase 'slide'"):
        rank_factors(sm, {f.name for f in gen.factors})
    # the writer, given another family's phase (a mode that reached this family through a factor kind),
    # has nothing to stage
    assert emphasise(LIB["pick_place"][1], "slide") is None
