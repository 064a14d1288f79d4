"""Chunk-endpoint shaping (DESIGN §4): telescoping, the terminal rule, policy invariance on an exact
tabular MDP, and the dense-reward ablation that is not a potential."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from coda_policy.shaping import (
    SHAPING_MODES,
    ChunkBatch,
    PotentialSource,
    ShapingConfig,
    chunk_return,
    dense_rewards,
    per_step_shaped,
    shape_episode,
    shape_episodes,
    sparse_rewards,
    success_index,
    task_program,
    td_target,
)
from programs.seeds import seed_library
from sim.episode import Episode
from sim.scene import ObjectSpec, Predicate, SceneSpec
from sim.world import StateLayout, WorldState

TP = seed_library()["pick_place"][1]


# ---- telescoping -----------------------------------------------------------------------------------
@pytest.mark.parametrize("h", [1, 2, 5, 8, 10])
@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0, 4.0])
def test_chunk_endpoint_equals_per_step_sum(h: int, gamma: float, beta: float) -> None:
    rng = np.random.default_rng([h, int(gamma * 100), int(beta * 10)])
    for terminal in (False, True):
        for _ in range(20):
            r, phi = rng.normal(size=h), rng.uniform(0, 5, h + 1)
            per_step = per_step_shaped(r, phi, gamma=gamma, beta=beta, terminal=terminal)
            want = float(np.sum(gamma ** np.arange(h) * per_step))
            got = chunk_return(r, phi[0], phi[-1], gamma=gamma, beta=beta, terminal=terminal)
            assert got == pytest.approx(want, abs=1e-10)


def test_terminal_rule() -> None:
    r = np.array([0.0, 0.0, 1.0])  # success reached on the third step
    g = chunk_return(r, 2.5, 5.0, gamma=0.9, beta=2.0, terminal=True)
    assert g == pytest.approx(0.81 - 2.0 * 2.5)  # no endpoint term; −βΦ(s_t) kept
    g_nt = chunk_return(r, 2.5, 5.0, gamma=0.9, beta=2.0, terminal=False)
    assert g_nt == pytest.approx(0.81 + 2.0 * 0.9**3 * 5.0 - 5.0)
    q = td_target(np.array([g, g_nt]), np.array([7.0, 7.0]), np.array([0.729, 0.729]),
                  np.array([False, True]))
    assert q[0] == pytest.approx(g) and q[1] == pytest.approx(g_nt + 0.729 * 7.0)


# ---- exact tabular MDP with open-loop chunks -------------------------------------------------------
def random_mdp(seed: int, n: int = 5, a: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """P (n, a, n + 1): last column is the absorbing success state; R (n, a, n + 1) per-step rewards."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n + 1) * 0.5, size=(n, a))
    r = np.zeros((n, a, n + 1))
    r[:, :, n] = 1.0  # the sparse verifier reward
    r[:, :, :n] += rng.normal(0, 0.1, (n, a, n)) * (seed % 2)  # odd seeds: extra arbitrary rewards
    return p, r


def chunk_paths(p: np.ndarray, r: np.ndarray, s: int, chunk: tuple[int, ...]):
    """Every path of an open-loop chunk from s: (probability, rewards, states, end state or None)."""
    n = p.shape[0]

    def go(x: int, i: int, prob: float, rews: list, states: list):
        if i == len(chunk):
            yield prob, rews, states, x
            return
        for y in range(n + 1):
            q = p[x, chunk[i], y]
            if q == 0:
                continue
            if y == n:  # success: the chunk stops here
                yield prob * q, [*rews, r[x, chunk[i], y]], [*states, None], None
            else:
                yield from go(y, i + 1, prob * q, [*rews, r[x, chunk[i], y]], [*states, y])

    yield from go(s, 0, 1.0, [], [s])


def chunk_q(p, r, phi, *, h: int, gamma: float, beta: float, terminal_rule: bool = True, iters: int = 3000):
    """Optimal chunk-level Q by value iteration, every chunk return computed by `chunk_return`."""
    n, a = p.shape[:2]
    chunks = list(itertools.product(range(a), repeat=h))
    model = []  # per (s, c): [(prob, G, γ^n, end)]
    for s in range(n):
        for c in chunks:
            rows = []
            for prob, rews, _states, end in chunk_paths(p, r, s, c):
                term = end is None
                phi_end = 0.0 if term else phi[end]
                if term and not terminal_rule:
                    phi_end, term_flag = phi.max(), False  # wrong: shapes into the success state too
                else:
                    term_flag = term
                g = chunk_return(np.array(rews), phi[s], phi_end, gamma=gamma, beta=beta, terminal=term_flag)
                rows.append((prob, g, gamma ** len(rews), end))
            model.append(rows)
    v = np.zeros(n)
    for _ in range(iters):
        q = np.array([sum(pr * (g + (0.0 if e is None else d * v[e])) for pr, g, d, e in rows)
                      for rows in model]).reshape(n, len(chunks))
        v_new = q.max(1)
        if np.max(np.abs(v_new - v)) < 1e-13:
            break
        v = v_new
    return q, v


@pytest.mark.parametrize("seed,h", [(0, 1), (1, 2), (2, 3), (3, 2)])
def test_tabular_shaping_shifts_values_by_minus_beta_phi(seed: int, h: int) -> None:
    p, r = random_mdp(seed)
    rng = np.random.default_rng(100 + seed)
    phi = rng.uniform(0, 4, p.shape[0])  # fixed, bounded, arbitrary (need not be a good potential)
    gamma, beta = 0.9, 1.5
    q, v = chunk_q(p, r, phi, h=h, gamma=gamma, beta=0.0)
    qs, vs = chunk_q(p, r, phi, h=h, gamma=gamma, beta=beta)
    np.testing.assert_allclose(qs, q - beta * phi[:, None], atol=1e-9)
    np.testing.assert_allclose(vs, v - beta * phi, atol=1e-9)
    np.testing.assert_array_equal(qs.argmax(1), q.argmax(1))


def test_tabular_without_terminal_rule_breaks_the_shift() -> None:
    p, r = random_mdp(2)
    phi = np.random.default_rng(5).uniform(0, 4, p.shape[0])
    q, _ = chunk_q(p, r, phi, h=2, gamma=0.9, beta=0.0)
    qs, _ = chunk_q(p, r, phi, h=2, gamma=0.9, beta=1.5, terminal_rule=False)
    assert np.max(np.abs(qs - (q - 1.5 * phi[:, None]))) > 1e-3


def test_dense_reward_can_change_the_optimal_policy() -> None:
    """0 → 2 → 3 → goal is the fast route; state 1 is next to the object (distance 0) but reaches the
    goal with probability 0.05 per step. −c·dist per step prefers 1; sparse and potential shaping with
    Φ = −dist (the same numbers as a potential) keep route 2."""
    n, goal = 4, 4
    p = np.zeros((n, 2, n + 1))
    p[0, 0, 2] = p[0, 1, 1] = 1.0  # action 0: the route, action 1: to the object
    p[1, :, goal], p[1, :, 1] = 0.05, 0.95
    p[2, :, 3] = p[3, :, goal] = 1.0
    r = np.zeros_like(p)
    r[:, :, goal] = 1.0
    dist = np.array([1.0, 0.0, 1.0, 1.0, 0.0])  # last entry: the goal
    dense = r - 1.0 * dist[None, None, :]  # the free-form reward, read at the next state
    q_sparse, _ = chunk_q(p, r, np.zeros(n), h=1, gamma=0.9, beta=0.0)
    q_dense, _ = chunk_q(p, dense, np.zeros(n), h=1, gamma=0.9, beta=0.0)
    q_pot, _ = chunk_q(p, r, -dist[:n], h=1, gamma=0.9, beta=1.0)
    assert q_sparse[0].argmax() == 0 and q_pot[0].argmax() == 0
    assert q_dense[0].argmax() == 1


# ---- episodes ----------------------------------------------------------------------------------------
def _scene() -> SceneSpec:
    box = dict(kind="box", category="cube", size=(0.02, 0.02, 0.02))
    return SceneSpec(family="pick_place", instruction="touch the target with the object", seed=0,
                     objects=(ObjectSpec(name="object", pos=(0.0, 0.0), **box),
                              ObjectSpec(name="target", pos=(0.2, 0.0), **box)),
                     goal=(Predicate(fn="in_contact", args=("object", "target")),), max_steps=50)


def _state(ee: np.ndarray, obj: np.ndarray, touching: bool) -> WorldState:
    names = ("object", "target")
    layout = StateLayout(objects=names, object_half=np.full((2, 3), 0.02), object_center=np.zeros((2, 3)),
                         joints=(), joint_range=np.zeros((0, 2)), regions=(), region_half=np.zeros((0, 3)),
                         handles=(), entities=("robot", "table", *names))
    contacts = np.zeros((4, 4), bool)
    contacts[2, 3] = contacts[3, 2] = touching
    return WorldState(layout=layout, ee_pos=np.asarray(ee, float), ee_mat=np.eye(3), gripper=0.04,
                      obj_pos=np.array([obj, [0.2, 0.0, 0.02]]), obj_mat=np.tile(np.eye(3), (2, 1, 1)),
                      joint_q=np.zeros(0), region_pos=np.zeros((0, 3)), region_mat=np.zeros((0, 3, 3)),
                      handle_pos=np.zeros((0, 3)), contacts=contacts, grasp=np.zeros(4, bool))


def synthetic_episode(steps: int, tau: int | None, policy: str = "policy",
                      blip: int | None = None) -> Episode:
    """States move the object towards the target; the goal holds from step `tau` on (and at `blip`)."""
    states = []
    for t in range(steps + 1):
        x = 0.2 * t / steps
        touching = (tau is not None and t >= tau) or t == blip
        states.append(_state([x, 0.1, 0.1], [x, 0.0, 0.02], touching))
    return Episode(scene=_scene(), actions=np.tile(np.arange(steps)[:, None] / steps, (1, 7)), states=states,
                   state_steps=np.arange(steps + 1), phases=["x"] * (steps + 1), success=tau is not None,
                   failing_phase=None, policy=policy)


def test_success_index_and_sparse_reward() -> None:
    ep = synthetic_episode(20, 13, blip=5)
    assert success_index(ep) == 13  # the transient goal state at 5 does not end the episode
    r = sparse_rewards(ep, 13)
    assert r.sum() == 1 and r[12] == 1
    assert success_index(synthetic_episode(20, None)) is None


def test_shape_episode_terminal_and_timeout() -> None:
    gamma, beta, h = 0.9, 2.0, 8
    phi = np.linspace(0, 4, 21)
    ep = synthetic_episode(20, 13)
    rows = shape_episode(ep, [0, 8, 16], phi, sparse_rewards(ep, 13), h=h, gamma=gamma, beta=beta)
    assert len(rows) == 2  # no chunk starts after the success
    (_, e0, n0, g0, _, b0, term0, _), (_, e1, n1, g1, _, b1, term1, a1) = rows
    assert (e0, n0, b0, term0) == (8, 8, True, False)
    assert g0 == pytest.approx(beta * gamma**8 * phi[8] - beta * phi[0])
    assert (e1, n1, b1, term1) == (13, 5, False, True) and g1 == pytest.approx(gamma**4 - beta * phi[8])
    np.testing.assert_array_equal(a1, ep.actions[8:16])  # the whole chunk the policy issued

    fail = synthetic_episode(20, None)
    rows = shape_episode(fail, [0, 8, 16], phi, np.zeros(20), h=h, gamma=gamma, beta=beta)
    _, end, n, g, disc, boot, term, acts = rows[-1]
    assert (end, n, boot, term) == (20, 4, True, False) and disc == pytest.approx(gamma**4)
    np.testing.assert_array_equal(acts[4:], np.repeat(fail.actions[-1:], 4, 0))  # padded by the last action
    assert g == pytest.approx(beta * gamma**4 * phi[20] - beta * phi[16])
    rows = shape_episode(fail, [16], phi, np.zeros(20), h=h, gamma=gamma, beta=beta, bootstrap_timeout=False)
    assert rows[0][5] is False and rows[0][3] == pytest.approx(-beta * phi[16])


def test_modes_on_synthetic_episodes() -> None:
    eps = [synthetic_episode(20, 13), synthetic_episode(20, None), synthetic_episode(20, 17, policy="expert")]
    batches: dict[str, ChunkBatch] = {}
    for mode in SHAPING_MODES:
        b = shape_episodes(eps, ShapingConfig(mode=mode, gamma=0.9), TP, h=8, demo_stride=4)
        assert len(b) == 2 + 3 + 5 and b.actions.shape == (10, 8, 7)
        assert b.demo.sum() == 5 and b.terminal.sum() == 3  # demo chunks from 12 and 16 both reach 17
        batches[mode] = b
    dart = [*eps[:2], synthetic_episode(20, 17, policy="expert_dart0.3")]  # LIBERO's noisy-execution demos
    b = shape_episodes(dart, ShapingConfig(gamma=0.9), TP, h=8, demo_stride=4)
    assert b.demo.sum() == 5 and b.demo[b.episode == 2].all() and not b.demo[b.episode < 2].any()
    t2p = batches["text2potential"]
    assert np.all(t2p.beta_phi_end[~t2p.bootstrap] == 0) and np.all(t2p.beta_phi_start >= 0)
    assert np.all(batches["sparse"].beta_phi_start == 0)
    sparse = batches["sparse"]
    assert np.count_nonzero(sparse.ret) == 3  # only the chunks that reach the goal earn anything
    assert not np.allclose(batches["dense_reward"].ret, sparse.ret)
    np.testing.assert_allclose(batches["frozen_actor"].ret, batches["text2potential"].ret)
    unit = batches["text2potential_unit"]  # the same potential at β = 1/m: βΦ within [0, 1]
    scaled = shape_episodes(eps, ShapingConfig(mode="text2potential", gamma=0.9, beta=1 / TP.m), TP, h=8,
                            demo_stride=4)
    np.testing.assert_allclose(unit.ret, scaled.ret)
    np.testing.assert_allclose(unit.beta_phi_start, t2p.beta_phi_start / (TP.beta * TP.m))
    assert unit.beta_phi_start.max() <= 1.0
    d = dense_rewards(eps[0], 0.5)
    s1 = eps[0].states[1]
    want = -0.5 * (np.linalg.norm(s1.ee_pos - s1.obj_pos[0]) + np.linalg.norm(s1.obj_pos[0] - s1.obj_pos[1]))
    assert d[0] == pytest.approx(want)


def test_task_potential_program() -> None:
    eps = synthetic_episode(20, 13)
    tp = task_program(eps.scene, TP)
    assert tp.m == 1 and tp.subgoals[0].done == "in_contact('object', 'target')"
    phi = PotentialSource("task_potential", TP).values(eps)
    assert np.all(phi[13:] == 1.0) and np.all((phi[:13] >= 0) & (phi[:13] < 1))
    assert np.all(np.diff(phi[:13]) > 0)  # the object approaches the target


def test_unknown_mode() -> None:
    with pytest.raises(ValueError, match="unknown shaping mode"):
        ShapingConfig(mode="sparce")
