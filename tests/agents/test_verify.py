"""Verification: verdicts (the statistics themselves: tests/common/test_stats.py), matched control edits,
paired batches, and a real sandbox-backed `run_batch`."""

from __future__ import annotations

import numpy as np
import pytest

from agents.critic.diagnose import CriticConfig
from agents.critic.verify import (
    Errored,
    VerifyConfig,
    build_batches,
    control_edit,
    decide,
    refuted_share,
    run_verification,
    sandbox_run_batch,
    verify,
)
from memory.types import Diagnosis
from programs.factor_space import magnitude, reference
from programs.seeds import seed_library
from sandbox import PoolConfig, SandboxPool
from tests.fakes.agents_fakes import FactorRunBatch, FakeOutcome, FakeSandboxPool

GEN = seed_library()["pick_place"][0]


def dx(factor: str = "obj_yaw", edit=(0.45, 0.6), phase: str = "grasp") -> Diagnosis:
    group = reference(GEN, factor).group
    return Diagnosis(episode_id="ep_1", factor_group=group, factor=factor, phase=phase, explanation="because",
                     edit={factor: edit}, side="high")


def test_decide_statuses():
    cfg = VerifyConfig()
    v = decide("dx_1", 9, 10, 1, 10, cfg)
    assert (v.status, v.n, v.targeted_failure_rate, v.control_failure_rate) == ("validated", 10, 0.9, 0.1)
    assert v.p_value < 0.01 and v.statistic == pytest.approx(0.8) and v.test.startswith("fisher_exact")
    assert decide("dx_1", 1, 10, 4, 10, cfg).status == "refuted"  # the control fails clearly more often
    assert decide("dx_1", 1, 24, 1, 24, cfg).status == "refuted"  # equal and low at n = 24: bounded
    assert decide("dx_1", 4, 10, 2, 10, cfg).status == "inconclusive"  # higher, not significantly
    assert decide("dx_1", 3, 3, 0, 3, cfg).status == "inconclusive"  # too few episodes counted


def test_equal_rates_at_small_n_and_saturated_batches_are_inconclusive_not_refuted():
    """Issue #10's observations at n = 6 (0.17 vs 0.17, 1.00 vs 1.00, 0.83 vs 1.00) bound nothing."""
    cfg = VerifyConfig(alpha=0.1)
    for t, c in ((1, 1), (6, 6), (5, 6), (3, 3)):
        v = decide("dx_1", t, 6, c, 6, cfg)
        assert v.status == "inconclusive", (t, c, v)
    ceiling = decide("dx_1", 12, 12, 12, 12, cfg)
    assert ceiling.status == "inconclusive" and "ceiling" in ceiling.reason
    # the diagnosed edit never recreating the failure, with a clean control, is evidence against it
    floor = decide("dx_1", 0, 12, 0, 12, cfg)
    assert floor.status == "refuted" and "bounded" in floor.reason


def test_min_effect_must_leave_room_for_an_increase():
    with pytest.raises(ValueError, match="min_effect"):
        VerifyConfig(min_effect=1.0)


def test_control_edit_matches_the_diagnosed_edit_in_relative_magnitude():
    d = dx("obj_yaw", (0.45, 0.6))  # ID [-0.6, 0.6]: offset 0.875 of the half-range, width 0.125 of the range
    off, width = magnitude(reference(GEN, "obj_yaw"), d.edit["obj_yaw"])
    assert (off, width) == pytest.approx((0.875, 0.125))
    for seed in range(20):
        name, value = control_edit(d, GEN, np.random.default_rng(seed))
        ref = reference(GEN, name)
        assert name != "obj_yaw" and ref.group in ("spatial", "attribute") and ref.type == "float"
        c_off, c_width = magnitude(ref, value)
        assert abs(c_off) == pytest.approx(0.875, abs=1e-4) and c_width == pytest.approx(0.125, abs=1e-4)
        assert ref.range[0] - 1e-9 <= value[0] <= value[1] <= ref.range[1] + 1e-9
    # factors with a hard side move towards it: low friction
    _, value = control_edit(d, GEN, np.random.default_rng(0), VerifyConfig(control_factor="friction"))
    assert value == pytest.approx((0.8, 0.85))


def test_control_of_a_choice_diagnosis_is_another_choice_of_the_same_kind():
    d = Diagnosis(episode_id="e", factor_group="attribute", factor="shape", phase="grasp", explanation="x",
                  edit={"shape": "cylinder"}, side="values")
    name, value = control_edit(d, GEN, np.random.default_rng(1))
    assert name == "color" and value in ("green", "blue")  # a seen, non-default value, like "cylinder"
    cfg = VerifyConfig(critic=CriticConfig(allow_ood=True))
    d_ood = d.model_copy(update={"edit": {"shape": "block"}})
    assert control_edit(d_ood, GEN, np.random.default_rng(1), cfg)[1] in ("yellow", "purple", "orange")


def test_control_factor_must_differ_and_exist():
    with pytest.raises(ValueError, match="must differ"):
        control_edit(dx(), GEN, np.random.default_rng(0), VerifyConfig(control_factor="obj_yaw"))
    with pytest.raises(KeyError, match="no factor 'wind'"):
        control_edit(dx(), GEN, np.random.default_rng(0), VerifyConfig(control_factor="wind"))


def test_batches_are_paired_and_edited():
    items, shell = build_batches(dx(), GEN, 6, np.random.default_rng(3), VerifyConfig(control_factor="mass"))
    assert len(items) == 12 and [i.arm for i in items[:2]] == ["targeted", "control"]
    assert shell.targeted.parent_id == GEN.id and shell.control.parent_id == GEN.id
    assert shell.targeted.factor("obj_yaw").range == (0.45, 0.6)
    for t, c in zip(items[::2], items[1::2], strict=True):
        assert t.seed == c.seed and t.index == c.index
        assert 0.45 <= t.factors["obj_yaw"] <= 0.6 and 0.1625 <= c.factors["mass"] <= 0.2
        same = set(t.factors) - {"obj_yaw", "mass"}
        assert {k: t.factors[k] for k in same} == {k: c.factors[k] for k in same}  # common random numbers


def yaw_matters(f: dict) -> float:
    return 0.85 if abs(f["obj_yaw"]) > 0.4 else 0.1


def test_a_true_diagnosis_is_validated():
    run = FactorRunBatch(yaw_matters, phase="grasp", base=0.1)
    res = run_verification(dx(), GEN, run, n=20, rng=np.random.default_rng(0),
                           config=VerifyConfig(control_factor="mass"))
    assert len(run.calls) == 1 and len(run.calls[0]) == 40  # n per batch, one call
    v = res.verdict
    assert v.status == "validated" and v.n == 20 and v.targeted_failure_rate > 0.6 > v.control_failure_rate
    assert res.counts["targeted_n"] == res.counts["control_n"] == 20 and res.counts["errors"] == 0
    assert res.control_factor == "mass" and v.diagnosis_id == dx().id


def test_a_wrong_factor_is_refuted_and_a_wrong_phase_is_reported_not_counted():
    run = FactorRunBatch(yaw_matters, phase="grasp")
    v = verify(dx("mass", (0.1625, 0.2)), GEN, run, n=20, rng=np.random.default_rng(0),
               config=VerifyConfig(control_factor="obj_yaw"))
    assert v.status == "refuted"  # the control (yaw) recreates the failure, the diagnosed mass does not
    # the right factor with the wrong phase: failures in any phase count, and where they ended is reported
    right = verify(dx(phase="lift"), GEN, run, n=20, rng=np.random.default_rng(0))
    assert right.status == "validated" and right.counted == "any"
    assert right.observed_phase == "grasp" and right.phase_share == 0.0
    # counting only the named phase (the earlier rule) refutes it: failures are in grasp, not lift
    v2 = verify(dx(phase="lift"), GEN, run, n=20, rng=np.random.default_rng(0),
                config=VerifyConfig(count="named"))
    assert v2.status == "refuted" and v2.targeted_failure_rate == 0.0 and v2.counted == "named"
    shares = refuted_share([v, v2, decide("d", 9, 10, 0, 10, VerifyConfig())])
    assert shares == pytest.approx(2 / 3)


def test_errored_items_are_left_out_and_too_few_make_it_inconclusive():
    run = FactorRunBatch(yaw_matters, error_every=2)  # every targeted item errors
    res = run_verification(dx(), GEN, run, n=6, rng=np.random.default_rng(0))
    assert res.counts["errors"] == 6 and res.counts["targeted_n"] == 0
    assert res.verdict.status == "inconclusive" and res.verdict.n == 0


def test_run_batch_must_answer_every_item():
    with pytest.raises(ValueError, match="returned 1 outcomes for 8 items"):
        verify(dx(), GEN, lambda items: [FakeOutcome(True, None)], n=4, rng=np.random.default_rng(0))


def test_sandbox_run_batch_maps_generation_errors_and_keeps_order():
    pool = FakeSandboxPool(fail_if=lambda f: f["mass"] > 0.19)
    seen = []

    def rollout(scenes):
        seen.extend(scenes)
        return [FakeOutcome(False, "grasp") if s.object("object").yaw > 0.4 else FakeOutcome(True, None)
                for s in scenes]

    items, _ = build_batches(dx(), GEN, 8, np.random.default_rng(2), VerifyConfig(control_factor="mass"))
    outcomes = sandbox_run_batch(pool, rollout)(items)
    assert len(outcomes) == 16 and len(seen) + sum(isinstance(o, Errored) for o in outcomes) == 16
    for item, out in zip(items, outcomes, strict=True):
        if item.arm == "control" and item.factors["mass"] > 0.19:
            assert isinstance(out, Errored) and "no room" in out.error
        elif item.arm == "targeted":
            assert out.success == (item.factors["obj_yaw"] <= 0.4)


def test_verification_through_the_real_sandbox():
    """The edited programs really run in the sandbox; the rollout sees their scenes."""
    def rollout(scenes):
        return [FakeOutcome(False, "grasp") if abs(s.object("object").yaw) > 0.4 else FakeOutcome(True, None)
                for s in scenes]

    with SandboxPool(PoolConfig(workers=1)) as pool:
        res = run_verification(dx(), GEN, sandbox_run_batch(pool, rollout), n=8, rng=np.random.default_rng(0),
                               config=VerifyConfig(control_factor="friction"))
    assert res.counts["errors"] == 0 and res.verdict.status == "validated"
    assert res.verdict.targeted_failure_rate == 1.0 and res.verdict.control_failure_rate < 0.5


def test_context_pins_hold_in_both_arms():
    gen = seed_library()["stack_insert"][0]
    d = Diagnosis(episode_id="e", factor_group="attribute", factor="peg_size", phase="grasp", explanation="x",
                  edit={"peg_size": (0.012, 0.01225), "task": "insert"}, side="low")
    items, shell = build_batches(d, gen, 5, np.random.default_rng(0))
    assert all(i.factors["task"] == "insert" for i in items)
    assert shell.control_factor not in ("task", "peg_size")
    for seed in range(30):  # never a factor the pinned task does not use
        name, _ = control_edit(d, gen, np.random.default_rng(seed))
        assert name not in ("block_size", "base_size", "task", "peg_size")
    assert shell.targeted.factor("task").choices == ("insert",) == shell.control.factor("task").choices
    with pytest.raises(ValueError, match="and its context"):
        control_edit(d, gen, np.random.default_rng(0), VerifyConfig(control_factor="task"))


def test_ood_conditions_hold_in_both_arms_and_are_never_the_control():
    """A diagnosis under OOD conditions (a number range and an unseen choice held beside the named
    factor) tests the factor under them: both batches sample those conditions, the control is another
    factor."""
    gen = seed_library()["pick_place"][0]
    d = Diagnosis(episode_id="e", factor_group="spatial", factor="obj_yaw", phase="approach", explanation="x",
                  edit={"obj_yaw": (-1.5, -1.2), "obj_x": (-0.1, -0.06), "color": "purple"}, side="low")
    items, shell = build_batches(d, gen, 6, np.random.default_rng(0))
    assert all(-0.1 <= i.factors["obj_x"] <= -0.06 and i.factors["color"] == "purple" for i in items)
    assert shell.control_factor not in d.edit
    assert all(-1.5 <= i.factors["obj_yaw"] <= -1.2 for i in items if i.arm == "targeted")


def test_the_moveback_control_keeps_the_diagnosed_factor_in_range_and_moves_nothing_else():
    """`control="moveback"`: the control batch is the targeted batch's scenes with the diagnosed factor
    drawn from the program's own range — same seeds and other factors, no other factor moved."""
    d = dx()  # obj_yaw in (0.45, 0.6)
    items, shell = build_batches(d, GEN, 8, np.random.default_rng(0), VerifyConfig(control="moveback"))
    assert shell.control_factor == "obj_yaw" and shell.control is GEN
    lo, hi = reference(GEN, "obj_yaw").range
    for t, c in zip(items[0::2], items[1::2], strict=True):
        assert t.seed == c.seed and 0.45 <= t.factors["obj_yaw"] <= 0.6 and lo <= c.factors["obj_yaw"] <= hi
        assert {k: v for k, v in t.factors.items() if k != "obj_yaw"} == \
            {k: v for k, v in c.factors.items() if k != "obj_yaw"}
    run = FactorRunBatch(yaw_matters, phase="grasp", base=0.1)
    v = verify(d, GEN, run, n=20, rng=np.random.default_rng(0), config=VerifyConfig(control="moveback"))
    assert v.status == "validated"  # yaw moved back mostly below 0.4: the failures go
    with pytest.raises(ValueError, match="control must be"):
        VerifyConfig(control="nothing")  # type: ignore[arg-type]


def lethal_colour(f: dict) -> float:
    """Purple objects always fail (a lethal nuisance); otherwise yaw matters as in `yaw_matters`."""
    return 1.0 if f["color"] == "purple" else yaw_matters(f)


def test_a_control_at_its_ceiling_under_the_context_is_tested_again_without_it():
    """Under a lethal context both batches fail every episode: no evidence either way. With
    `at_ceiling="without_context"` the factor is tested alone on the program and that verdict stands,
    marked, with the first test's counts kept."""
    d = Diagnosis(episode_id="e", factor_group="spatial", factor="obj_yaw", phase="grasp", explanation="x",
                  edit={"obj_yaw": (0.45, 0.6), "color": "purple"}, side="high")
    run = FactorRunBatch(lethal_colour, phase="grasp", base=0.1)
    first = run_verification(d, GEN, run, n=20, rng=np.random.default_rng(0), config=VerifyConfig())
    assert first.verdict.status == "inconclusive" and "ceiling" in first.verdict.reason
    assert not first.verdict.context_dropped and len(run.calls) == 1
    res = run_verification(d, GEN, run, n=20, rng=np.random.default_rng(0),
                           config=VerifyConfig(at_ceiling="without_context"))
    v = res.verdict
    assert v.status == "validated" and v.context_dropped and "without its context" in v.reason
    assert len(run.calls) == 3 and all(i.factors["color"] != "purple" for i in run.calls[2])
    assert res.counts["context_control_failures"] == 20 and res.counts["control_n"] == 20
    assert v.diagnosis_id == d.without_context().id and d.without_context().edit == {"obj_yaw": (0.45, 0.6)}
    # a wrong factor under the same context is refuted alone; a diagnosis without context is tested once
    wrong = d.model_copy(update={"factor": "mass", "factor_group": "attribute",
                                 "edit": {"mass": (0.1625, 0.2), "color": "purple"}})
    cfg = VerifyConfig(at_ceiling="without_context", control_factor="obj_yaw")
    assert verify(wrong, GEN, run, n=20, rng=np.random.default_rng(0), config=cfg).status == "refuted"
    alone = FactorRunBatch(lambda f: 1.0, phase="grasp")
    once = run_verification(dx(), GEN, alone, n=8, rng=np.random.default_rng(0),
                            config=VerifyConfig(at_ceiling="without_context"))
    assert once.verdict.status == "inconclusive" and len(alone.calls) == 1
    with pytest.raises(ValueError, match="at_ceiling"):
        VerifyConfig(at_ceiling="retry")  # type: ignore[arg-type]
