"""Text2potential properties (DESIGN §4) over many random states, and agreement with demonstrations.

The property tests drive the real compiler with synthetic states: subgoal k is done when object o{k}
is higher than 0.5 and its progress is o{k}'s x, so random positions give random done/progress values
(including progress outside [0, 1) and nan).
"""

from __future__ import annotations

import numpy as np
import pytest

from programs.model import Subgoal, TrainingProgram
from programs.potential import (
    PROGRESS_CAP,
    PotentialError,
    agreement,
    agreement_report,
    chunk_pairs,
    compile_potential,
)
from programs.seeds import SEED_FAMILIES, seed_library
from tests.programs.helpers import synthetic_state

N_STATES = 3000


def random_program(m: int) -> TrainingProgram:
    return TrainingProgram(family="synthetic", subgoals=tuple(
        Subgoal(name=f"g{k}", done=f"z('o{k}') > 0.5", progress=f"x('o{k}')") for k in range(m)))


def random_pos(rng: np.random.Generator, m: int) -> np.ndarray:
    pos = np.c_[rng.uniform(-0.5, 1.5, m), np.zeros(m), rng.uniform(0, 1, m)]
    pos[rng.random(m) < 0.05, 0] = np.nan
    pos[rng.random(m) < 0.3, 2] = 1.0  # make long done prefixes common
    return pos


def prefix(done: np.ndarray) -> int:
    return int(np.argmin(done)) if not done.all() else len(done)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8])
def test_phi_bounds_verifier_and_prefix(m):
    rng = np.random.default_rng(m)
    pot = compile_potential(random_program(m))
    for _ in range(N_STATES // 5):
        pos = random_pos(rng, m)
        s = synthetic_state(m, pos)
        phi, done = pot(s), pos[:, 2] > 0.5
        assert 0.0 <= phi <= m
        assert (phi == m) == bool(done[-1])  # Φ = m iff the verifier holds
        if not done[-1]:
            k = prefix(done[:-1])
            assert pot.stage(s) == k
            assert k <= phi < k + 1
            p = pos[k, 0]
            want = 0.0 if not p > 0 else min(p, PROGRESS_CAP)
            assert phi == pytest.approx(k + want)


@pytest.mark.parametrize("m", [2, 4, 6])
def test_making_a_subgoal_done_never_lowers_k_star(m):
    rng = np.random.default_rng(10 + m)
    pot = compile_potential(random_program(m))
    for _ in range(N_STATES // 3):
        pos = random_pos(rng, m)
        before = pot.stage(synthetic_state(m, pos))
        j = int(rng.integers(m))
        pos[j, 2] = 1.0
        after = pot.stage(synthetic_state(m, pos))
        assert after >= before
        if j == before and j < m - 1:  # completing the first open subgoal extends the prefix
            assert after > before


def test_batch_matches_calls_and_done_matrix_is_raw():
    rng = np.random.default_rng(0)
    pot = compile_potential(random_program(4))
    positions = [random_pos(rng, 4) for _ in range(200)]
    states = [synthetic_state(4, p) for p in positions]
    assert np.array_equal(pot.batch(states), np.array([pot(s) for s in states]))
    assert np.array_equal(pot.done_matrix(states), np.array([p[:, 2] > 0.5 for p in positions]))


def test_evaluation_errors_name_the_subgoal():
    tp = TrainingProgram(family="synthetic", subgoals=(
        Subgoal(name="ok", done="z('o0') > 0.5"), Subgoal(name="broken", done="x('missing') > 0")))
    msg = r"subgoal 2 'broken' .done `x\('missing'\) > 0` failed: KeyError"
    with pytest.raises(PotentialError, match=msg):
        compile_potential(tp)(synthetic_state(1, np.zeros((1, 3))))


def test_roles_from_the_goal_need_the_scene():
    _, tp = seed_library()["pick_place"]
    with pytest.raises(ValueError, match="compile with the scene"):
        compile_potential(tp)


def test_chunk_pairs_follow_control_steps():
    i, j = chunk_pairs(np.array([0, 2, 4, 6, 8, 9]), 4)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 2), (1, 3), (2, 4)]  # 6 → 9 is < h


def test_agreement_counts_pairs_and_ties():
    tp = random_program(2)
    up = [synthetic_state(2, np.array([[x, 0, 0], [0, 0, 0]])) for x in np.linspace(0, 0.9, 12)]
    assert agreement(tp, [up], h=1) == 1.0
    r = agreement_report(tp, [up[::-1]], h=2)
    assert r.agreement == 0.0 and r.pairs == 10 and r.drops == {"g0": 10}
    flat = [up[0]] * 5
    r = agreement_report(tp, [flat], h=1)
    assert r.agreement == 1.0 and r.ties == 4  # ties count as agreeing


# The LIBERO families' cases are slow (LIBERO's expert, 15-30 s each), covered by `python -m bench.programs`;
# libero_object's agreement also by tests/sim/test_families.py (its seed training program on two expert
# episodes), which runs in every test run
@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.slow)
                                    if f.startswith("libero_") else f
                                    for f in SEED_FAMILIES])
def test_seed_training_programs_agree_with_expert_demos(family, demos):
    episodes = demos(family)
    assert len(episodes) == 3 and all(ep.success for ep in episodes)
    _, tp = seed_library()[family]
    report = agreement_report(tp, episodes)
    assert report.agreement >= 0.9, report.summary()
    for ep in episodes:  # the verifier is the goal: Φ = m exactly at the successful end
        pot = compile_potential(tp, ep.scene)
        assert pot(ep.states[-1]) == tp.m
        assert pot(ep.states[0]) < 1.0
