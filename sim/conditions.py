"""A scene's `Conditions` (`sim.scene`, the extended factor space of `sim.extension`) where they act beyond
the model: the arm's start moved (inverse kinematics at build time), noise and gain on the actions the arm
executes (`SimEnv.step`), and the noisy, lagging state a policy reads (`sim.mujoco_episode`). Every draw
comes from a generator seeded with the scene's seed, so an episode stays a function of its scene and its
policy."""

from __future__ import annotations

import dataclasses
from collections import deque

import mujoco
import numpy as np

from sim.builder import BuiltScene
from sim.controller import orientation_error
from sim.scene import Conditions, SceneSpec
from sim.world import WorldState

ACTION_STREAM, OBSERVATION_STREAM = 1, 2  # the noise generators' streams beside the scene seed


def started(built: BuiltScene) -> BuiltScene:
    """`built` with the arm's start moved as its scene's `ee_offset` says (itself when it says nothing)."""
    c = built.spec.conditions
    if c is None or not any(c.ee_offset):
        return built
    ix = built.index
    qpos = moved_start(built.model, built.init_qpos, ix.arm_qpos, ix.arm_dof, ix.ee_site, c.ee_offset)
    return dataclasses.replace(built, init_qpos=qpos)


def moved_start(model: mujoco.MjModel, qpos: np.ndarray, arm_qpos: np.ndarray, arm_dof: np.ndarray,
                site: int, offset: tuple[float, float, float], iters: int = 200) -> np.ndarray:
    """`qpos` with the arm turned (damped least squares) so the grip site stands `offset` from where `qpos`
    puts it, keeping its orientation."""
    d = mujoco.MjData(model)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(model, d)
    goal, R_goal = d.site_xpos[site] + np.asarray(offset), d.site_xmat[site].reshape(3, 3).copy()
    jnt = model.dof_jntid[arm_dof]
    lo, hi = model.jnt_range[jnt, 0], model.jnt_range[jnt, 1]
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    for _ in range(iters):
        mujoco.mj_kinematics(model, d)
        mujoco.mj_comPos(model, d)
        R = d.site_xmat[site].reshape(3, 3)
        e = np.concatenate((goal - d.site_xpos[site], orientation_error(R_goal, R)))
        if np.linalg.norm(e) < 1e-5:
            break
        mujoco.mj_jacSite(model, d, jacp, jacr, site)
        J = np.vstack((jacp[:, arm_dof], jacr[:, arm_dof]))
        dq = J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(6), e)
        d.qpos[arm_qpos] = np.clip(d.qpos[arm_qpos] + dq, lo, hi)
    return d.qpos.copy()


class ActionNoise:
    """Gain and Gaussian noise on the Δposition/Δrotation part of each action (the gripper's is as given)."""

    def __init__(self, spec: SceneSpec) -> None:
        self.c = spec.conditions or Conditions()
        self.seed = spec.seed
        self.active = self.c.action_noise > 0 or self.c.action_gain != 1.0
        self.reset()

    def reset(self) -> None:
        self.rng = np.random.default_rng([self.seed, ACTION_STREAM])

    def __call__(self, action: np.ndarray) -> np.ndarray:
        if not self.active:
            return action
        a = np.array(action, float)
        a[:6] = a[:6] * self.c.action_gain + self.rng.normal(0.0, self.c.action_noise, 6)
        return a


class PolicyView:
    """The state a policy reads: the world's, `obs_delay` control steps old, its object, region and handle
    positions with Gaussian noise of std `obs_noise` (m). One per episode: `see` every state the world
    reaches, `read` when the policy is asked; inactive (the world's own state) for the expert."""

    def __init__(self, spec: SceneSpec, active: bool = True) -> None:
        self.c = spec.conditions or Conditions()
        self.rng = np.random.default_rng([spec.seed, OBSERVATION_STREAM])
        self.past: deque[WorldState] = deque(maxlen=self.c.obs_delay + 1)
        self.active = active and (self.c.obs_noise > 0 or self.c.obs_delay > 0)

    def see(self, s: WorldState) -> None:
        """Record the world's latest state."""
        if self.active:
            self.past.append(s)

    def read(self, s: WorldState) -> WorldState:
        """What the policy reads now that the world is at `s` (the last state seen)."""
        if not self.active:
            return s
        old, n = self.past[0], self.c.obs_noise
        if n <= 0:
            return old
        return dataclasses.replace(old, obj_pos=old.obj_pos + self.rng.normal(0.0, n, old.obj_pos.shape),
                                   region_pos=old.region_pos + self.rng.normal(0.0, n, old.region_pos.shape),
                                   handle_pos=old.handle_pos + self.rng.normal(0.0, n, old.handle_pos.shape))
