"""Text2potential chunk-endpoint shaping (DESIGN §4, Eq. 3) and the ablations' reward signals.

Reward: sparse and from the task verifier (the scene's goal predicates, which are also the last `done`
of every training program): r = 1 on the control step whose next state starts the episode's final,
successful run of goal states; 0 otherwise. That success is absorbing. For a chunk of h steps from s_t

    G = Σ_{i<h} γ^i r_{t+i} + βγ^h Φ(s_{t+h}) − βΦ(s_t)          Q(s_t, A_t) ← G + γ^h V(s_{t+h})

and when the success step τ falls inside the chunk (t < τ ≤ t + h) the chunk stops there: the sum runs
over i < τ − t, the endpoint term βγ^hΦ and the bootstrap are both omitted and −βΦ(s_t) stays — i.e.
Φ(absorbing) = 0, the terminal rule under which shaping keeps the optimal policy (values shift by −βΦ).
A chunk cut by the step limit is not terminal: it keeps its endpoint term and bootstraps (n = T − t).

Modes (all real code paths): `text2potential` Φ from a training program; `text2potential_unit` the same
with β = 1/m for a program of m subgoals, so that βΦ ∈ [0, 1] is on the scale of the success reward it is
added to (shaping is a prior on the value, V ≈ βΦ before the critic learns: with β = 1 a state with four of
five stages done is worth four successes, and a critic that only half-learns that drop ranks the last
chunk of a success below a failure's — FINDINGS #25); `sparse` Φ ≡ 0;
`task_potential` Φ from a one-subgoal program written from the scene's goal (verifier + distance
progress); `dense_reward` Φ ≡ 0 plus a free-form dense reward −c·(|ee − a| + |a − b|) per step, which is
not a potential difference; `frozen_actor` shapes like `text2potential` (its difference is at the policy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from programs.model import Subgoal, TrainingProgram
from programs.potential import PotentialCache
from sim.episode import Episode
from sim.predicates import goal_reached
from sim.scene import Predicate, SceneSpec
from sim.world import WorldState

SHAPING_MODES = ("text2potential", "text2potential_unit", "sparse", "task_potential", "dense_reward",
                 "frozen_actor")
TASK_PROGRESS_RANGE = 0.5  # m: distance at which the task-description potential's progress is 0


@dataclass(frozen=True, kw_only=True)
class ShapingConfig:
    """How chunk returns are shaped."""

    # one of SHAPING_MODES
    mode: str = "text2potential"
    # shaping scale β; None takes the training program's (`text2potential_unit`: 1/m)
    beta: float | None = None
    # discount per control step γ; None takes the training program's
    gamma: float | None = None
    # c of the `dense_reward` ablation's per-step reward −c·(|ee − a| + |a − b|)
    dense_scale: float = 0.1
    # a chunk cut by the episode's step limit bootstraps from V (a time limit is not a terminal state)
    bootstrap_timeout: bool = True

    def __post_init__(self) -> None:
        if self.mode not in SHAPING_MODES:
            raise ValueError(f"unknown shaping mode {self.mode!r}; modes: {', '.join(SHAPING_MODES)}")
        if self.beta is not None and self.beta < 0:
            raise ValueError(f"beta must be >= 0, got {self.beta}")
        if self.gamma is not None and not 0 < self.gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")


# ---- the math (pure) -------------------------------------------------------------------------------
def chunk_return(rewards: np.ndarray, phi_start: float, phi_end: float, *, gamma: float, beta: float,
                 terminal: bool) -> float:
    """Eq. 3 over the n = len(rewards) steps the chunk lasted; a terminal chunk drops βγ^nΦ(end)."""
    r = np.asarray(rewards, float)
    g = float(np.sum(gamma ** np.arange(len(r)) * r))
    if not terminal:
        g += beta * gamma ** len(r) * phi_end
    return g - beta * phi_start


def per_step_shaped(rewards: np.ndarray, phis: np.ndarray, *, gamma: float, beta: float,
                    terminal: bool) -> np.ndarray:
    """Reference: r̃_i = r_i + βγΦ(s_{i+1}) − βΦ(s_i) for every step, with Φ(s_n) := 0 when s_n is the
    absorbing success state. `phis` has len(rewards) + 1 entries."""
    phi = np.asarray(phis, float).copy()
    if terminal:
        phi[-1] = 0.0
    return np.asarray(rewards, float) + beta * gamma * phi[1:] - beta * phi[:-1]


def unit_beta(program: TrainingProgram) -> float:
    """β = 1/m for a program of m subgoals: βΦ ∈ [0, 1], the scale of the sparse success reward."""
    return 1.0 / len(program.subgoals)


def td_target(g: np.ndarray, v_end: np.ndarray, discount: np.ndarray, bootstrap: np.ndarray) -> np.ndarray:
    """Q target: G + γ^n V(s_{t+n}) where the chunk bootstraps, G alone where it ends in success."""
    return g + np.where(bootstrap, discount * v_end, 0.0)


# ---- rewards ---------------------------------------------------------------------------------------
def success_index(ep: Episode) -> int | None:
    """τ: index of the first state of the episode's final run of goal states (None if it failed)."""
    if not ep.success:
        return None
    flags = [goal_reached(s, ep.scene.goal) for s in ep.states]
    tau = len(flags) - 1  # the last state is the settled goal state of a successful episode
    while tau > 0 and flags[tau - 1]:
        tau -= 1
    return tau


def sparse_rewards(ep: Episode, tau: int | None) -> np.ndarray:
    """r_i for transition s_i → s_{i+1}: 1 into the success state, else 0."""
    r = np.zeros(len(ep.states) - 1)
    if tau is not None and tau > 0:
        r[tau - 1] = 1.0
    return r


def _goal_entities(goal: Sequence[Predicate]) -> list[str]:
    return [a for a in goal[0].args if isinstance(a, str)][:2]


def dense_rewards(ep: Episode, scale: float) -> np.ndarray:
    """The free-form ablation's reward on transition i, read at s_{i+1}: −c·(|ee − a| + |a − b|) with a, b
    the first goal predicate's entities (−c·|ee − a| when it has one)."""
    ents = _goal_entities(ep.scene.goal)
    if not ents:
        raise ValueError(f"dense_reward: goal {ep.scene.goal} names no entity")

    def r(s: WorldState) -> float:
        pa = s.position(ents[0])
        d = float(np.linalg.norm(s.ee_pos - pa))
        if len(ents) > 1:
            d += float(np.linalg.norm(pa - s.position(ents[1])))
        return -scale * d

    return np.array([r(s) for s in ep.states[1:]])


# ---- potentials ------------------------------------------------------------------------------------
def _quote(a: str | float) -> str:
    return repr(a) if isinstance(a, str) else f"{float(a)!r}"


def _progress(p: Predicate) -> str:
    ents = [a for a in p.args if isinstance(a, str)]
    if p.fn in ("opened", "open_frac"):
        return f"open_frac({_quote(ents[0])})"
    if p.fn == "closed":
        return f"1 - open_frac({_quote(ents[0])})"
    if len(ents) >= 2:
        return f"1 - clip(dist({_quote(ents[0])}, {_quote(ents[1])}) / {TASK_PROGRESS_RANGE}, 0, 1)"
    return "0.0"


def task_program(scene: SceneSpec, like: TrainingProgram) -> TrainingProgram:
    """The `task_potential` ablation: one subgoal written from the task description alone — done = the
    goal predicates (the verifier), progress = closeness of the goal's two entities (or the joint's
    opening). No reach/grasp stages; β, γ, h copied from `like`."""
    done = " and ".join(f"{p.fn}({', '.join(_quote(a) for a in p.args)})" for p in scene.goal)
    return TrainingProgram(family=scene.family, mode_id="task_description", subgoals=(
        Subgoal(name="goal", done=done, progress=_progress(scene.goal[0]), doc="the task verifier"),),
        beta=like.beta, gamma=like.gamma, chunk=like.chunk)


class PotentialSource:
    """Φ along an episode for a shaping mode (Φ ≡ 0 for `sparse` and `dense_reward`)."""

    def __init__(self, mode: str, program: TrainingProgram) -> None:
        self.mode, self.program = mode, program
        self._cache = PotentialCache(program)
        self._task: dict[tuple, PotentialCache] = {}

    def values(self, ep: Episode) -> np.ndarray:
        if self.mode in ("sparse", "dense_reward"):
            return np.zeros(len(ep.states))
        if self.mode == "task_potential":
            key = tuple(ep.scene.goal)
            if key not in self._task:
                self._task[key] = PotentialCache(task_program(ep.scene, self.program))
            return self._task[key].for_scene(ep.scene).batch(ep.states)
        return self._cache.for_scene(ep.scene).batch(ep.states)


# ---- episodes → shaped chunk transitions -----------------------------------------------------------
@dataclass(frozen=True)
class ChunkBatch:
    """Shaped chunk transitions of a list of episodes, as parallel arrays (N chunks)."""

    episode: np.ndarray  # (N,) index of the episode in the list given to `shape_episodes`
    start: np.ndarray  # (N,) state index t of s_t (= control step; states are recorded every step)
    end: np.ndarray  # (N,) state index t + n of the chunk's endpoint
    steps: np.ndarray  # (N,) n: control steps the chunk lasted (h, or fewer at success / step limit)
    ret: np.ndarray  # (N,) shaped chunk return G
    discount: np.ndarray  # (N,) γ^n
    bootstrap: np.ndarray  # (N,) bool: the target adds γ^n V(s_{t+n})
    terminal: np.ndarray  # (N,) bool: success inside the chunk
    demo: np.ndarray  # (N,) bool: from an expert demonstration
    success: np.ndarray  # (N,) bool: its episode succeeded
    beta_phi_start: np.ndarray  # (N,) βΦ(s_t): exact shaped values sit −βΦ(s) below the unshaped ones
    beta_phi_end: np.ndarray  # (N,) βΦ(s_{t+n}) (0 when terminal: the absorbing state's potential)
    actions: np.ndarray  # (N, h, 7) executed chunk, padded by repeating its last action

    def __len__(self) -> int:
        return len(self.start)


def chunk_actions(actions: np.ndarray, t: int, h: int) -> np.ndarray:
    a = actions[t:t + h]
    if len(a) < h:
        a = np.concatenate([a, np.repeat(a[-1:], h - len(a), axis=0)])
    return a


def _check_steps(ep: Episode) -> None:
    if len(ep.states) != len(ep.actions) + 1 or not np.array_equal(ep.state_steps, np.arange(len(ep.states))):
        raise ValueError(f"shaping needs every control step's state (record_every=1); episode of scene "
                         f"{ep.scene.scene_id} has {len(ep.states)} states for {len(ep.actions)} actions")


def shape_episode(ep: Episode, starts: Sequence[int], phis: np.ndarray, rewards: np.ndarray, *, h: int,
                  gamma: float, beta: float, bootstrap_timeout: bool = True) -> list[tuple]:
    """One row (t, end, n, G, γ^n, bootstrap, terminal, actions) per chunk start before the episode ended."""
    _check_steps(ep)
    T, tau = len(ep.actions), success_index(ep)
    limit = tau if tau is not None else T
    rows = []
    for t in starts:
        if t >= limit:
            continue
        end = min(t + h, limit)
        terminal = tau is not None and t + h >= tau
        cut = not terminal and t + h > T and not bootstrap_timeout  # step limit treated as an episode end
        g = chunk_return(rewards[t:end], phis[t], phis[end], gamma=gamma, beta=beta, terminal=terminal or cut)
        n = end - t
        rows.append((t, end, n, g, gamma ** n, not (terminal or cut), terminal,
                     chunk_actions(ep.actions, t, h)))
    return rows


def shape_episodes(episodes: Sequence[Episode], cfg: ShapingConfig, program: TrainingProgram, *, h: int,
                   demo_stride: int | None = None, rollout_stride: int | None = None) -> ChunkBatch:
    """Shaped chunks of every episode. A policy rollout asked for a chunk every `rollout_stride` steps
    (default h: chunks executed whole), so those are its decision points; an expert acts every step, so
    its chunks start every `demo_stride` steps (default h)."""
    gamma = cfg.gamma if cfg.gamma is not None else program.gamma
    beta = cfg.beta if cfg.beta is not None else unit_beta(program) if cfg.mode == "text2potential_unit" \
        else program.beta
    source = PotentialSource(cfg.mode, program)
    cols: list[list] = [[] for _ in range(8)]
    index, demo, success, bphi0, bphi1 = [], [], [], [], []
    for i, ep in enumerate(episodes):
        is_demo = ep.is_demonstration
        rewards = sparse_rewards(ep, success_index(ep))
        if cfg.mode == "dense_reward":
            rewards = rewards + dense_rewards(ep, cfg.dense_scale)
        stride = (demo_stride or h) if is_demo else (rollout_stride or h)
        phis = source.values(ep)
        rows = shape_episode(ep, range(0, len(ep.actions), stride), phis, rewards, h=h,
                             gamma=gamma, beta=beta, bootstrap_timeout=cfg.bootstrap_timeout)
        bphi0 += [beta * phis[r[0]] for r in rows]
        bphi1 += [beta * phis[r[1]] * r[5] for r in rows]  # r[5]: bootstraps (else the episode ended)
        for row in rows:
            for c, v in zip(cols, row, strict=True):
                c.append(v)
        index += [i] * len(rows)
        demo += [is_demo] * len(rows)
        success += [bool(ep.success)] * len(rows)
    n = len(index)
    return ChunkBatch(
        episode=np.array(index, int), start=np.array(cols[0], int), end=np.array(cols[1], int),
        steps=np.array(cols[2], int), ret=np.array(cols[3], float), discount=np.array(cols[4], float),
        bootstrap=np.array(cols[5], bool), terminal=np.array(cols[6], bool), demo=np.array(demo, bool),
        success=np.array(success, bool), beta_phi_start=np.array(bphi0, float),
        beta_phi_end=np.array(bphi1, float),
        actions=np.array(cols[7], float).reshape(n, h, 7))
