"""Operational-space end-effector control of the Panda, in numpy.

A policy action is 7-D and normalised to [-1, 1]: Δposition (×`POS_SCALE` m), Δrotation as an
axis-angle vector in the world frame (×`ROT_SCALE` rad), gripper (−1 open … +1 closed). Each 20 Hz
control step sets a goal pose relative to the current one; the torque law
τ = Jᵀ Λ (kp·e − kd·v) + nullspace posture + bias is recomputed every `update_every` physics
substeps, and MuJoCo runs the substeps in between in C (`mj_step(..., nstep)`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from sim.builder import ROBOT_INIT_QPOS, SUBSTEPS, SceneIndex

POS_SCALE = 0.05
ROT_SCALE = 0.5
GRIPPER_OPEN = 0.04  # finger joint travel, m


@dataclass(frozen=True, kw_only=True)
class OSCConfig:
    """Gains of the operational-space controller (robosuite's defaults, critically damped)."""

    kp_pos: float = 150.0  # translational stiffness
    kp_rot: float = 150.0  # rotational stiffness
    kp_null: float = 10.0  # posture stiffness in the nullspace
    update_every: int = 5  # recompute torques every N physics substeps (1 = every substep)

    def __post_init__(self) -> None:
        if self.update_every < 1 or SUBSTEPS % self.update_every:
            raise ValueError(f"update_every must divide the {SUBSTEPS} substeps of a control step")


def orientation_error(R_goal: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Rotation vector that takes R towards R_goal (both 3×3): robosuite's ½ Σᵢ rᵢ × gᵢ, written as
    vee(G Rᵀ − R Gᵀ) / 2 because three `np.cross` calls cost more than the whole torque law."""
    A = R_goal @ R.T
    return 0.5 * np.array((A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1]))


def axis_angle_to_mat(v: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(v))
    if angle < 1e-9:
        return np.eye(3)
    k = v / angle
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * (K @ K)


class OSCController:
    """Holds the goal pose and turns it into arm torques. Preallocates its work buffers."""

    def __init__(self, model: mujoco.MjModel, index: SceneIndex, config: OSCConfig | None = None) -> None:
        self.m, self.ix = model, index
        self.cfg = config or OSCConfig()
        c = self.cfg
        self.kp = np.array([c.kp_pos] * 3 + [c.kp_rot] * 3)
        self.kd = 2.0 * np.sqrt(self.kp)
        self.kd_null = 2.0 * np.sqrt(c.kp_null)
        self.q_null = np.array(ROBOT_INIT_QPOS)
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._M = np.zeros((model.nv, model.nv))
        self._reg = np.eye(6) * 1e-6  # keeps Λ finite near singular poses
        self._dofs = index.arm_dof
        self._dof_grid = np.ix_(index.arm_dof, index.arm_dof)
        self.goal_pos = np.zeros(3)
        self.goal_R = np.eye(3)
        self.grip_target = GRIPPER_OPEN

    def reset(self, data: mujoco.MjData) -> None:
        self.goal_pos = data.site_xpos[self.ix.ee_site].copy()
        self.goal_R = data.site_xmat[self.ix.ee_site].reshape(3, 3).copy()
        self.grip_target = float(data.qpos[self.ix.grip_qpos[0]])  # the fingers hold their start

    def set_action(self, data: mujoco.MjData, action: np.ndarray) -> None:
        """Set the goal from a normalised 7-D action (clipped to [-1, 1])."""
        a = np.clip(action, -1.0, 1.0)
        self.goal_pos = data.site_xpos[self.ix.ee_site] + a[:3] * POS_SCALE
        R = data.site_xmat[self.ix.ee_site].reshape(3, 3)
        self.goal_R = axis_angle_to_mat(a[3:6] * ROT_SCALE) @ R
        self.grip_target = GRIPPER_OPEN * (1.0 - (a[6] + 1.0) / 2.0)

    def torques(self, data: mujoco.MjData) -> np.ndarray:
        m, ix, d = self.m, self.ix, self._dofs
        mujoco.mj_jacSite(m, data, self._jacp, self._jacr, ix.ee_site)
        J = np.vstack((self._jacp[:, d], self._jacr[:, d]))
        mujoco.mj_fullM(m, data, self._M)
        M = self._M[self._dof_grid]
        M_inv = np.linalg.inv(M)
        Mx = np.linalg.inv(J @ M_inv @ J.T + self._reg)
        qvel = data.qvel[d]
        v = J @ qvel
        R = data.site_xmat[ix.ee_site].reshape(3, 3)
        err = np.concatenate((self.goal_pos - data.site_xpos[ix.ee_site], orientation_error(self.goal_R, R)))
        F = Mx @ (self.kp * err - self.kd * v)
        tau = J.T @ F
        J_bar = M_inv @ J.T @ Mx
        null = np.eye(7) - J.T @ J_bar.T
        q = data.qpos[ix.arm_qpos]
        tau += null @ (M @ (self.cfg.kp_null * (self.q_null - q) - self.kd_null * qvel))
        return tau + data.qfrc_bias[d]

    def apply(self, data: mujoco.MjData) -> None:
        data.ctrl[self.ix.arm_act] = self.torques(data)
        data.ctrl[self.ix.grip_act[0]] = self.grip_target
        data.ctrl[self.ix.grip_act[1]] = -self.grip_target
