"""The critic: failure summaries, the rules critic's evidence, the LLM critic's validation and retries."""

from __future__ import annotations

import numpy as np
import pytest

from agents.critic.diagnose import (
    CANDIDATES,
    REASON_CHARS,
    AnswerError,
    CriticConfig,
    DiagnosisOut,
    answer_to_diagnosis,
    critic_request,
    diagnose,
    summarize_failure,
)
from agents.critic.factors import read_factors, scene_context
from agents.critic.rules import rank_factors
from agents.critic.summary import FailureSummary
from agents.llm.base import LLMOutputError
from programs.factor_space import band_edit, reference
from programs.seeds import seed_library
from sim.episode import Episode, ExpertPolicy, run_episode
from sim.families import get_family
from sim.scene import SceneSpec
from tests.fakes.agents_fakes import (
    idle_failure,
    pick_place_scene,
    queued_llm,
    slip_lift_failure,
    yaw_grasp_failure,
)

GEN = seed_library()["pick_place"][0]


def test_summary_reads_timeline_numbers_events_and_factors():
    sm = summarize_failure(yaw_grasp_failure(0.55), schema=GEN.factors, episode_id="ep_7")
    assert sm.episode_id == "ep_7" and sm.failing_phase == "grasp"
    assert [p.phase for p in sm.timeline] == ["approach", "grasp", "approach"]
    assert sm.numbers["yaw_misalignment"] == pytest.approx(0.55, abs=1e-3)
    assert sm.numbers["gripper_opening"] == pytest.approx(sm.numbers["object_width_across_fingers"], abs=2e-3)
    yaw = sm.factor("obj_yaw")
    assert yaw is not None and yaw.position == pytest.approx(0.55 / 0.6, abs=1e-3) and "high edge" in yaw.note
    text = sm.text()
    assert "failing phase: grasp" in text and "0.55 rad" in text and "obj_yaw = 0.550" in text
    assert sm.factor("template").note == ""  # a template index is a category, not an edge


def test_rules_critic_names_yaw_for_a_jammed_grasp_and_edits_towards_it():
    dx = diagnose(yaw_grasp_failure(0.55), GEN)
    assert (dx.factor, dx.phase, dx.factor_group, dx.critic_id) == ("obj_yaw", "grasp", "spatial", "rules")
    assert dx.edit["obj_yaw"] == (0.3, 0.6)  # at least as extreme as 0.55, inside the ID range
    beyond = diagnose(yaw_grasp_failure(0.55), GEN, config=CriticConfig(allow_ood=True))
    assert beyond.edit["obj_yaw"] == (0.55, 1.15)  # past it: the value stays in, at most half the ID width
    assert dx.side == "high" and dx.confidence > 0.8
    assert "0.55 rad" in dx.explanation


def test_rules_critic_blames_mass_or_friction_for_a_slip_and_is_unsure_between_them():
    dx = diagnose(slip_lift_failure(mass=0.195, friction=0.82), GEN)
    assert dx.phase == "lift" and dx.factor in ("mass", "friction")
    assert dx.confidence < 0.7
    # a light, grippy object: the slip now points at the factor on its hard side only
    dx2 = diagnose(slip_lift_failure(mass=0.06, friction=0.84), GEN)
    assert dx2.factor == "friction" and dx2.side == "low"


@pytest.mark.parametrize(("factor", "value"), [("paraphrase", True), ("color", "purple")])
def test_rules_critic_blames_an_unseen_instruction_or_colour_when_the_hand_barely_moves(factor, value):
    dx = diagnose(idle_failure(**{factor: value}), GEN, config=CriticConfig(allow_ood=True))
    assert (dx.factor, dx.phase, dx.edit) == (factor, "approach", {factor: value})
    assert dx.side == "values"


def test_unseen_choices_are_only_named_when_edits_may_use_them():
    dx = diagnose(idle_failure(paraphrase=True), GEN)  # default: no OOD edits, so not the paraphrase
    assert dx.factor != "paraphrase" and dx.phase == "approach"
    assert all(v is not True for v in dx.edit.values())


def test_out_of_range_scene_values_are_clipped_into_the_allowed_edit():
    dx = diagnose(yaw_grasp_failure(0.9), GEN)  # an OOD yaw; edits stay in the ID range by default
    assert dx.edit["obj_yaw"] == (0.3, 0.6)
    dx_ood = diagnose(yaw_grasp_failure(0.9), GEN, config=CriticConfig(allow_ood=True))
    assert dx_ood.edit["obj_yaw"] == (0.9, 1.5)  # from the failing value out to the OOD bound


def test_band_edit_stays_on_its_side_and_inside_the_bounds():
    ref = reference(GEN, "friction")  # ID [0.8, 1.2], OOD [0.5, 1.2]
    assert band_edit(ref, 0.81, -1, band=0.25, allow_ood=False) == (0.8, 0.9)  # at least a quarter wide
    assert band_edit(ref, 0.93, -1, band=0.25, allow_ood=False) == (0.8, 0.93)  # up to the failing value
    assert band_edit(ref, 1.05, -1, band=0.25, allow_ood=False) == (0.8, 1.0)  # at most half the range
    assert band_edit(ref, 1.1, 1, band=0.25, allow_ood=False) == (1.1, 1.2)
    assert band_edit(ref, 0.6, -1, band=0.25, allow_ood=True) == (0.5, 0.6)


def test_a_successful_episode_is_not_diagnosed():
    ep = yaw_grasp_failure()
    ep.success, ep.failing_phase = True, None
    with pytest.raises(ValueError, match="succeeded"):
        diagnose(ep, GEN)


def test_rules_critic_on_a_real_stalled_episode():
    """A real rollout: a policy that holds still. The summary reads the simulator's states."""
    fam = get_family("pick_place")
    scene = pick_place_scene(obj_x=0.11, obj_y=-0.19)
    ep = run_episode(scene, lambda obs: np.zeros((1, 7)), max_steps=30)
    assert isinstance(ep, Episode) and not ep.success and ep.failing_phase == "approach"
    sm = summarize_failure(ep, schema=GEN.factors)
    assert sm.flags["stalled"] == 1.0 and sm.flags["ee_path"] < 0.05
    ranked = rank_factors(sm, {f.name for f in GEN.factors})
    assert ranked[0].reading.name in ("obj_x", "obj_y") and "further from the robot" in ranked[0].reasons[0]
    assert fam.phases[0] == "approach"


# ---- the LLM critic ---------------------------------------------------------------------------------------
GOOD = {"factor": "obj_yaw", "phase": "grasp", "explanation": "The cube was turned 0.55 rad.", "value": 0.5,
        "confidence": 0.8}


ALONE = CriticConfig(llm_prompt="alone")


def test_llm_critic_validates_and_builds_a_diagnosis():
    llm, completer = queued_llm(GOOD)
    dx = diagnose(yaw_grasp_failure(), GEN, llm, critic="llm", config=ALONE)
    assert (dx.factor, dx.phase, dx.critic_id, dx.confidence) == ("obj_yaw", "grasp", "fake/fake-model", 0.8)
    lo, hi = dx.edit["obj_yaw"]
    assert lo < 0.5 < hi
    user = completer.requests[0].user
    assert "obj_yaw [spatial] = 0.55" in user and "0.55 rad" in user and "grasp" in user


def test_the_llm_critics_schemas_hold_only_what_the_scene_and_family_have():
    """Decoded under these schemas (llama.cpp's grammar), a factor or a phase that does not exist cannot be
    written. The hybrid answer chooses among the rules critic's candidates, in their order."""
    sm = summarize_failure(yaw_grasp_failure(), schema=GEN.factors)
    alone = critic_request(sm, GEN, ALONE).schema.model_json_schema()["properties"]
    assert list(alone) == ["explanation", "phase", "factor", "value", "confidence"]  # the reason first
    assert alone["phase"]["enum"] == [p for p in get_family("pick_place").phases if p != "done"]
    assert alone["factor"]["enum"] == [f.name for f in GEN.factors if sm.factor(f.name).live]
    request = critic_request(sm, GEN, CriticConfig())  # the default: hybrid
    hybrid = request.schema.model_json_schema()["properties"]
    assert list(hybrid) == ["keep", "factor", "explanation"]  # no phase: where it got stuck
    ranked = [c.reading.name for c in rank_factors(sm, {f.name for f in GEN.factors}, ood_first=True)]
    assert hybrid["factor"]["enum"] == ranked[:CANDIDATES] and ranked[0] == "obj_yaw"
    assert hybrid["explanation"]["maxLength"] == REASON_CHARS


def test_the_hybrid_critic_keeps_the_first_candidate_or_overrides_it_with_a_later_one():
    rules = diagnose(yaw_grasp_failure(), GEN)
    second = critic_request(summarize_failure(yaw_grasp_failure(), schema=GEN.factors), GEN,
                            CriticConfig()).ranked[1].reading.name
    keep = {"keep": True, "factor": second, "explanation": "The yaw jammed the grasp."}
    llm, completer = queued_llm(keep, {**keep, "keep": False, "explanation": "Too heavy."})
    dx = diagnose(yaw_grasp_failure(), GEN, llm, critic="llm")
    user = completer.requests[0].user
    assert "Candidates, best first:\n1. obj_yaw = 0.55" in user and "0.55 rad off" in user
    assert "Stuck in: grasp" in user and "At the failure" not in user  # compact: no line of raw numbers
    assert completer.requests[0].system.endswith("a few words citing the evidence.")  # instructions: static
    assert (dx.factor, dx.phase, dx.confidence) == ("obj_yaw", "grasp", rules.confidence)  # kept: candidate 1
    assert dx.edit == rules.edit  # the scene's value, as the rules critic edits it
    over = diagnose(yaw_grasp_failure(), GEN, llm, critic="llm")
    assert (over.factor, over.phase, over.confidence) == (second, "grasp", 0.5)
    assert over.explanation == "Too heavy."
    assert completer.requests[1].system == completer.requests[0].system


@pytest.mark.parametrize(("bad", "message"), [  # an endpoint that does not enforce the schema's enums
    ({**GOOD, "factor": "object_yaw"}, "factor: Input should be 'target', 'template'"),
    ({**GOOD, "phase": "grasping"}, "phase: Input should be 'approach', 'grasp'"),
    ({**GOOD, "value": 2.5}, "outside its allowed range [-0.6, 0.6]"),
    ({**GOOD, "value": "sideways"}, "'sideways' is not"),
    ({**GOOD, "factor": "color", "value": "purple"}, "'purple' is not a choice of factor 'color'"),
    ({**GOOD, "explanation": "  "}, "explanation is empty"),
])
def test_llm_critic_feeds_schema_violations_back_and_retries(bad, message):
    llm, completer = queued_llm(bad, GOOD)
    dx = diagnose(yaw_grasp_failure(), GEN, llm, critic="llm", config=ALONE)
    assert dx.factor == "obj_yaw"
    assert len(completer.requests) == 2
    assert message in completer.requests[1].user  # the error reached the second attempt's prompt
    assert "could not be used" in completer.requests[1].user


def test_llm_critic_retries_malformed_and_truncated_output_then_reports_the_last_error():
    from agents.llm.base import Completion

    truncated = Completion(text='{"factor": "obj_y', tool_called=True, finish_reason="length")
    llm, completer = queued_llm("I think it was the yaw.", "{not json", truncated)
    with pytest.raises(LLMOutputError) as info:
        diagnose(yaw_grasp_failure(), GEN, llm, critic="llm",
                 config=CriticConfig(retries=2, llm_prompt="alone"))
    assert info.value.problem == "truncated" and len(completer.requests) == 3
    assert "invalid_json" in completer.requests[2].user  # each retry saw the previous problem


def test_llm_critic_gives_up_with_a_clear_schema_error():
    llm, _ = queued_llm({**GOOD, "factor": "weather"}, {**GOOD, "factor": "weather"})
    with pytest.raises(LLMOutputError) as info:
        diagnose(yaw_grasp_failure(), GEN, llm, critic="llm",
                 config=CriticConfig(retries=1, llm_prompt="alone"))
    assert info.value.problem == "schema" and "factor: Input should be 'target'" in info.value.feedback()


def test_answer_choice_values_are_coerced_and_pinned():
    sm = summarize_failure(idle_failure(paraphrase=True), schema=GEN.factors)
    out = DiagnosisOut(factor="paraphrase", phase="approach", explanation="unseen wording", value="true")
    dx = answer_to_diagnosis(out, sm, GEN, CriticConfig(allow_ood=True), "x")
    assert dx.edit == {"paraphrase": True} and dx.side == "values"
    with pytest.raises(AnswerError, match="not a choice"):  # True is an OOD value: refused without allow_ood
        answer_to_diagnosis(out, sm, GEN, CriticConfig(), "x")


def test_critic_arguments_are_checked():
    with pytest.raises(ValueError, match="needs an llm"):
        diagnose(yaw_grasp_failure(), GEN, None, critic="llm")
    with pytest.raises(ValueError, match="unknown critic"):
        diagnose(yaw_grasp_failure(), GEN, None, critic="oracle")  # type: ignore[arg-type]


# ---- which factors matter in a scene --------------------------------------------------------------------
def stack_insert_scene(task: str) -> SceneSpec:
    fam = get_family("stack_insert")
    factors = fam.default_factors()
    factors["task"]["task"] = task
    return fam.make_scene(factors, seed=1)


def test_factors_that_do_not_shape_the_scene_are_dead_and_context_is_found():
    insert = stack_insert_scene("insert")
    live = {r.name: r.live for r in read_factors(insert, get_family("stack_insert").factors)}
    assert not live["block_size"] and not live["base_size"] and live["peg_size"] and live["hole"]
    assert scene_context(insert, "peg_size") == {"task": "insert"}
    assert scene_context(stack_insert_scene("stack"), "block_size") == {"task": "stack"}
    assert scene_context(insert, "mass") == {}


def test_llm_critic_may_not_name_a_factor_that_does_not_shape_the_scene():
    scene = stack_insert_scene("insert")
    gen = seed_library()["stack_insert"][0]
    sm = FailureSummary(episode_id="e", family="stack_insert", instruction=scene.instruction, success=False,
                        failing_phase="grasp", steps=10, timeline=(), subject="peg", target="holeblock",
                        failure_step=5, factors=read_factors(scene, gen.factors), scene=scene)
    out = DiagnosisOut(factor="block_size", phase="grasp", explanation="too wide")
    with pytest.raises(AnswerError, match="'block_size' does not change this scene"):
        answer_to_diagnosis(out, sm, gen, CriticConfig(), "x")
    dx = answer_to_diagnosis(out.model_copy(update={"factor": "peg_size"}), sm, gen, CriticConfig(), "x")
    assert dx.edit["task"] == "insert" and set(dx.edit) == {"peg_size", "task"}  # the context travels along


class LetGoOfTheHandle:
    """The articulated expert, but it opens the gripper 15 steps into the drag."""

    def __init__(self, scene: SceneSpec) -> None:
        self.expert, self.k = ExpertPolicy(scene), 0

    def __call__(self, obs):
        a = self.expert(obs)[0].copy()
        if self.expert.expert.phase in ("pull", "push"):
            self.k += 1
            a[6] = -1.0 if self.k > 15 else a[6]
        return a[None]


def test_summary_of_a_real_articulated_failure():
    scene = get_family("articulated").sample_scene(1)
    ep = run_episode(scene, LetGoOfTheHandle(scene))
    assert not ep.success and ep.failing_phase == "pull"
    sm = summarize_failure(ep)
    assert sm.subject == "cabinet/drawer0" and sm.target == "" and sm.flags["grasp_lost"] == 1.0
    assert "slipped out of the fingers" in sm.text() and 0.3 < sm.numbers["open_fraction"] < 0.75
    dx = diagnose(ep, seed_library()["articulated"][0])
    assert dx.phase == "pull" and "slipped out of the fingers while dragging" in dx.explanation


def test_keyframes_go_to_image_capable_models_only(tmp_path):
    from sim.render import save_png

    ep = yaw_grasp_failure()
    frames = [save_png(np.zeros((8, 8, 3), np.uint8), tmp_path / f"k{i}.png") for i in range(4)]
    ep.keyframes = [str(p) for p in frames]
    llm, completer = queued_llm(GOOD, images=True)
    diagnose(ep, GEN, llm, critic="llm", config=ALONE)
    assert len(completer.requests[0].images) == 3  # CriticConfig.max_keyframes, the last ones
    llm, completer = queued_llm(GOOD)
    diagnose(ep, GEN, llm, critic="llm", config=ALONE)
    assert completer.requests[0].images == ()


def _yaw_summary(phase: str, subject_kind: str = "") -> tuple[FailureSummary, set[str]]:
    """A pick-place failure in `phase` on a scene whose yaw is 0.55, and the seed program's factor names."""
    fam = get_family("pick_place")
    factors = fam.default_factors()
    factors["spatial"]["obj_yaw"] = 0.55
    gen = seed_library()["pick_place"][0]
    scene = fam.make_scene(factors, seed=3)
    sm = FailureSummary(episode_id="e", family="pick_place", instruction=scene.instruction, success=False,
                        failing_phase=phase, steps=10, timeline=(), subject="object", target="target",
                        subject_kind=subject_kind, failure_step=5, factors=read_factors(scene, gen.factors),
                        scene=scene)
    return sm, {f.name for f in gen.factors}


def test_peers_that_fail_with_a_like_value_push_that_factor_up_the_ranking():
    """The round's other episodes of the family: every one with a yaw like this scene's failed, the rest
    succeeded. The contrast names the yaw with its counts and raises its score; without peers it does
    not move."""
    from agents.critic.rules import rank_factors
    from agents.critic.summary import with_peers
    sm, names = _yaw_summary("grasp")
    alone = {c.reading.name: c.score for c in rank_factors(sm, names)}
    peers = [({"obj_yaw": 0.5 + 0.01 * i, "obj_x": 0.0}, False) for i in range(5)] + \
        [({"obj_yaw": -0.3 + 0.05 * i, "obj_x": 0.0}, True) for i in range(6)]
    both = with_peers(sm, peers)
    k = both.contrast["obj_yaw"]
    assert (k.near_failed, k.near, k.far_failed, k.far) == (5, 5, 0, 6) and k.p_value < 0.01
    ranked = rank_factors(both, names)
    scores = {c.reading.name: c.score for c in ranked}
    assert scores["obj_yaw"] > 3 * alone["obj_yaw"]
    assert scores["obj_x"] == pytest.approx(alone["obj_x"])  # no contrast: every peer has the same x
    yaw = next(c for c in ranked if c.reading.name == "obj_yaw")
    assert "5/5 of the round's episodes" in " ".join(yaw.reasons)
    assert "with obj_yaw like here 5/5 failed" in both.text()


def test_band_edit_past_the_id_range_keeps_the_failing_value():
    ref = reference(GEN, "obj_yaw")  # ID [-0.6, 0.6], OOD [-1.5, 1.5]
    assert band_edit(ref, 0.55, 1, band=0.25, allow_ood=True) == (0.55, 1.15)
    assert band_edit(ref, -1.3, -1, band=0.25, allow_ood=True) == (-1.5, -1.2)  # a quarter wide at least
    assert band_edit(ref, 1.45, 1, band=0.25, allow_ood=True) == (1.2, 1.5)  # within the OOD bound


def test_a_strong_peer_contrast_overrides_the_phase_prior():
    """An approach failure on a round object: the phase table and the round-object discount give its yaw
    0.3 × 0.2; peers that fail with a like yaw 6/6 against 0/6 lift it to at least the default 0.3, and a
    weak contrast (p ≥ 0.05) does not."""
    from agents.critic.rules import OTHER, rank_factors
    from agents.critic.summary import with_peers

    sm, names = _yaw_summary("approach", subject_kind="cylinder")

    def yaw(s):
        return next(c for c in rank_factors(s, names) if c.reading.name == "obj_yaw")

    assert yaw(sm).relevance == pytest.approx(0.06)
    strong = [({"obj_yaw": 0.5}, False)] * 6 + [({"obj_yaw": -0.3}, True)] * 6
    assert yaw(with_peers(sm, strong)).relevance == pytest.approx(OTHER)
    weak = [({"obj_yaw": 0.5}, False)] * 2 + [({"obj_yaw": 0.5}, True)] + [({"obj_yaw": -0.3}, True)] * 3
    assert yaw(with_peers(sm, weak)).relevance == pytest.approx(0.06)


def _ood_summary(phase: str = "approach", yaw: float = -1.3,
                 mass: float = 0.1) -> tuple[FailureSummary, object]:
    """A pick-place failure where obj_x, the colour, the target (an unseen plate) and by default obj_yaw
    are out of distribution and the mass is not."""
    fam, gen = get_family("pick_place"), seed_library()["pick_place"][0]
    values = fam.default_factors()
    values["task"].update(target="big_plate")
    values["spatial"].update(obj_yaw=yaw, obj_x=-0.08)
    values["attribute"].update(color="purple", mass=mass)
    scene = fam.make_scene(values)
    sm = FailureSummary(episode_id="e", family="pick_place", instruction="x", success=False,
                        failing_phase=phase, steps=1, timeline=(), subject="obj", target="plate",
                        failure_step=0, factors=read_factors(scene, gen.factors), scene=scene)
    return sm, gen


def test_ood_conditions_hold_the_failing_scenes_other_ood_factors():
    """With `ood_context`, a diagnosis of `obj_yaw` on a scene where `obj_x`, `color` and the task's
    target were also out of distribution holds all three (the number at least as extreme as the scene's,
    the unseen colour and plate themselves); in-distribution factors and the named factor itself are left
    out."""
    from agents.config import CriticConfig
    from agents.critic.edits import ood_conditions

    sm, gen = _ood_summary()
    on = CriticConfig(allow_ood=True, ood_context=True)
    got = ood_conditions(sm, gen, "obj_yaw", on)
    assert set(got) == {"obj_x", "color", "target"} and got["color"] == "purple"
    assert got["target"] == "big_plate"  # an unseen task choice is a condition too (FINDINGS #16)
    lo, hi = got["obj_x"]
    assert lo <= -0.08 <= hi and hi < reference(gen, "obj_x").range[0]  # past the ID range, value kept
    assert ood_conditions(sm, gen, "obj_yaw", CriticConfig(allow_ood=True)) == {}  # off by default
    assert ood_conditions(sm, gen, "obj_yaw", CriticConfig(ood_context=True)) == {}  # needs OOD edits


def test_on_a_domain_randomization_background_its_own_draws_are_not_conditions():
    """With `RunConfig.background` "dr" the diagnosis is verified on domain randomization's program, where
    the failing scene's other OOD values are ordinary draws: `on_background` keeps only the conditions that
    lie outside the background (obj_x and obj_yaw, past narrowly widened ranges) and the diagnosed
    factor's edit."""
    from agents.config import CriticConfig
    from agents.critic.diagnose import rules_diagnosis
    from agents.critic.edits import on_background
    from programs.seeds import dr_program

    sm, gen = _ood_summary(yaw=-1.1)  # outside the ID range (±0.6), inside domain randomization's (±1.2)
    on = CriticConfig(allow_ood=True, ood_context=True)
    dx = rules_diagnosis(sm, gen, on)
    ood = {"obj_x", "obj_yaw", "color", "target"}
    assert set(dx.edit) == ood and dx.factor in ood
    wide = on_background(dx, sm, gen, on, dr_program(gen, 0.5))
    assert set(wide.edit) == {dx.factor} and wide.edit[dx.factor] == dx.edit[dx.factor]
    narrow = on_background(dx, sm, gen, on, dr_program(gen, 0.01))
    assert set(narrow.edit) == {dx.factor, "obj_x", "obj_yaw"}  # outside the background: still conditions
    assert on_background(dx, sm, gen, on, gen) == dx  # on the seed program nothing is the background's


def test_the_rules_critic_ranks_out_of_distribution_factors_first():
    """A lift failure: the phase table rates mass above every position, and the scene's heavy object
    (inside its mass range) outscores the out-of-distribution obj_x, colour and target by score alone.
    With `ood_first` (the default) those three lead the ranking and the diagnosis names one of them;
    without, the mass leads."""
    from agents.critic.rules import out_of_distribution

    sm, gen = _ood_summary("lift", yaw=0.0, mass=0.19)
    names = {f.name for f in gen.factors}
    by_score = rank_factors(sm, names)
    assert by_score[0].reading.name == "mass" and not out_of_distribution(by_score[0].reading)
    first = rank_factors(sm, names, ood_first=True)
    assert {c.reading.name for c in first[:3]} == {"obj_x", "color", "target"}
    assert not any(out_of_distribution(c.reading) for c in first[3:])
    assert [c.reading.name for c in first[3:]] == [c.reading.name for c in by_score
                                                   if not out_of_distribution(c.reading)]
    from agents.critic.diagnose import rules_diagnosis

    assert CriticConfig().ood_first
    assert rules_diagnosis(sm, gen, CriticConfig(allow_ood=True)).factor in {"obj_x", "color", "target"}
    assert rules_diagnosis(sm, gen, CriticConfig(allow_ood=True, ood_first=False)).factor == "mass"


def test_a_hand_that_went_to_the_plate_instead_of_the_object_is_a_wrong_target():
    """The hand heads for the plate and hovers 4 cm over it, never nearer than 22 cm to the object it
    should pick: the summary flags a wrong target. (The check used to compare that distance in metres
    with 0.25, a share of a factor's range, so it fired only when the hand stayed 25 cm from the object.)"""
    from tests.fakes.agents_fakes import Frame, carry_episode, line

    scene = pick_place_scene()
    o, t = (*scene.object("object").pos, 0.02), scene.object("target").pos
    over_plate = (t[0], t[1] - 0.02, 0.05)
    frames = [Frame(ee=p, obj=o, phase="approach") for p in line((-0.2, 0.0, 0.3), over_plate, 10)]
    frames += [Frame(ee=over_plate, obj=o, phase="approach") for _ in range(5)]
    sm = summarize_failure(carry_episode(scene, frames), schema=GEN.factors)
    assert 0.1 < sm.flags["min_ee_to_object"] < 0.25
    assert sm.flags["wrong_target"] == 1.0
    assert "nearer to 'target'" in sm.text()


def test_a_push_that_failed_sliding_names_the_friction_that_resisted_it():
    """The push family's slide phase has its own relevance row: friction on its hard (high) side breaks a
    slide, so it outranks an object position at the edge of its range. Without a row every kind scored the
    default 0.3 there, and the position's atypicality alone named it."""
    fam, gen = get_family("push"), seed_library()["push"][0]
    factors = fam.default_factors()
    factors["attribute"]["friction"] = 1.1  # half-way to the high edge of [0.8, 1.2]
    factors["spatial"]["obj_x"] = 0.1  # the high edge of [0, 0.1]
    scene = fam.make_scene(factors, seed=3)
    sm = FailureSummary(episode_id="e", family="push", instruction=scene.instruction, success=False,
                        failing_phase="slide", steps=10, timeline=(), subject="object", target="target",
                        subject_kind="box", failure_step=5, factors=read_factors(scene, gen.factors),
                        scene=scene)
    ranked = rank_factors(sm, {f.name for f in gen.factors})
    assert ranked[0].reading.name == "friction" and ranked[0].relevance > 0.3
    assert next(c for c in ranked if c.reading.name == "obj_x").relevance == pytest.approx(0.3)


def test_the_random_critic_names_a_scene_factor_at_random_seeded_by_the_episode():
    """The critic ablated (issue #39): whatever the evidence, the factor is drawn among the failing scene's
    editable factors, the same one for the same episode, many different ones over many episodes."""
    from agents.critic.diagnose import random_diagnosis, rules_diagnosis

    sm, gen = _ood_summary("lift", yaw=0.0, mass=0.19)
    cfg = CriticConfig(allow_ood=True)
    named = {}
    for i in range(40):
        one = sm.model_copy(update={"episode_id": f"ep_{i}"})
        dx = random_diagnosis(one, gen, cfg)
        assert dx == random_diagnosis(one, gen, cfg)  # seeded by the episode
        assert dx.critic_id == "random" and dx.confidence == 0.0 and dx.phase == "lift"
        assert dx.factor in dx.edit and "the critic ablated" in dx.explanation
        named[dx.factor] = named.get(dx.factor, 0) + 1
    live = {r.name for r in sm.factors if r.live}
    assert set(named) <= live and len(named) >= 5  # spread over the scene's factors, not the evidence's
    assert max(named.values()) < 40 // 2
    assert rules_diagnosis(sm, gen, cfg).factor in {"obj_x", "color", "target"}  # where the rules look
    assert diagnose(yaw_grasp_failure(0.55), GEN, critic="random").critic_id == "random"
