"""Scene validity in our MuJoCo world: does a `SceneSpec` compile, start without overlaps, settle, lie within
the Panda's reach, and can the scripted expert solve it? Each failure names what is wrong in plain words.

`check_mujoco_scene` runs the checks in that order on one `SimEnv` and stops at the first failure. The
expert's successful episode is kept on the report as a demonstration. Callers check a scene of any world
with `sim.validity.check_scene`, which comes here for a family whose `world` is "mujoco".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from sim.assets import AssetError
from sim.builder import ROBOT_BASE, ROBOT_INIT_QPOS, TABLE_CENTER_X, TABLE_HALF, PlacementError
from sim.controller import axis_angle_to_mat, orientation_error
from sim.env import SimEnv
from sim.mujoco_episode import run_mujoco_episode
from sim.records import Episode, Reason, ValidityReport
from sim.scene import SceneSpec
from sim.world import WorldState

CHECKS: tuple[str, ...] = ("compile", "interpenetration", "settling", "reachability", "solvability")
DOWN = np.array([0.0, 0.0, -1.0])  # the grip site's z axis when the gripper points straight down


@dataclass(frozen=True, kw_only=True)
class ValidityConfig:
    """Tolerances of the checks; the defaults suit table-top scenes with the robosuite Panda."""

    max_penetration: float = 0.003  # m; deeper initial contacts between entities are an overlap
    settle_steps: int = 20  # control steps (20 Hz) the robot holds still while the scene settles
    rest_speed: float = 0.02  # m/s; an object faster than this after settling is still moving
    max_drift: float = 0.02  # m; an object that moved further while settling was floating or unstable
    max_joint_drift: float = 0.1  # fraction of a fixture joint's range it may drift while settling
    fall_z: float = -0.05  # m; an object whose bottom is below this fell off the table
    reach_min: float = 0.25  # m; horizontal distance from the robot base, nearer is inside the arm
    reach_max: float = 0.85  # m; horizontal distance from the base, further is out of reach (Panda: 0.855)
    reach_height: float = 0.5  # m; targets at or above this height are out of reach
    # which fixture handles must be reachable: "goal" = those of joints the goal names (a cabinet's other
    # drawer may sit out of reach without making the task unsolvable), "all" = every handle
    handles: Literal["all", "goal"] = "goal"
    ik_offset: float = 0.05  # m; the IK goal is this far above each target
    ik_pos_tol: float = 0.01  # m; IK position error that counts as reached
    ik_angle_tol: float = 0.1  # rad; IK tilt of the gripper from straight down that counts as reached
    ik_iters: int = 100  # damped-least-squares iterations
    ik_damping: float = 0.05  # DLS damping λ; larger is slower but steadier near singularities

    def __post_init__(self) -> None:
        if self.settle_steps < 1 or self.ik_iters < 1:
            raise ValueError("settle_steps and ik_iters must be at least 1")
        if self.handles not in ("all", "goal"):
            raise ValueError(f"handles must be 'all' or 'goal', got {self.handles!r}")
        if not 0 <= self.reach_min < self.reach_max:
            raise ValueError(f"need 0 <= reach_min < reach_max, got {self.reach_min}, {self.reach_max}")


class _Failed(Exception):
    def __init__(self, reason: Reason, message: str, attempt: Episode | None = None) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.attempt = reason, attempt


def check_mujoco_scene(spec: SceneSpec, *, solve: bool = True,
                       config: ValidityConfig | None = None) -> ValidityReport:
    """Run the checks in order (compile, interpenetration, settling, reachability, solvability if
    `solve`) on one `SimEnv` and stop at the first failure."""
    cfg = config or ValidityConfig()
    checks: dict[str, bool] = {"compile": False}
    demo: Episode | None = None
    try:
        env = _compile(spec)
        checks["compile"] = True
        for name, check in _ENV_CHECKS:
            if name == "solvability" and not solve:
                continue
            checks[name] = False
            demo = check(env, cfg)
            checks[name] = True
    except _Failed as f:
        return ValidityReport(ok=False, reason=f.reason, message=str(f), checks=checks, attempt=f.attempt)
    return ValidityReport(ok=True, reason=None, message="ok: " + ", ".join(checks) + " passed", checks=checks,
                          demo=demo, attempt=demo)


def _compile(spec: SceneSpec) -> SimEnv:
    try:
        return SimEnv(spec)
    except PlacementError as e:
        raise _Failed("placement", str(e)) from None
    except (ValueError, AssetError) as e:
        raise _Failed("compile", str(e)) from None


def _entity(env: SimEnv, geom: int) -> int:
    return int(env.index.body_owner[env.model.geom_bodyid[geom]])


def _interpenetration(env: SimEnv, cfg: ValidityConfig) -> None:
    """Deepest initial contact between two different entities. The robot is included (an object inside
    the arm is as broken as two overlapping objects) except where its base stands on the table."""
    env.reset()
    d, names = env.data, env.index.entity_names
    robot, table = names.index("robot"), names.index("table")
    worst: tuple[float, int, int] | None = None
    for i in range(d.ncon):
        c = d.contact[i]
        a, b = sorted((_entity(env, c.geom[0]), _entity(env, c.geom[1])))
        if a == b or a < 0 or (a, b) == (robot, table):
            continue
        if -c.dist > cfg.max_penetration and (worst is None or -c.dist > worst[0]):
            worst = (-c.dist, a, b)
    if worst is not None:
        depth, a, b = worst
        raise _Failed("interpenetration", f"{names[a]!r} and {names[b]!r} overlap by {depth * 1000:.1f} mm "
                      f"at start (tolerance {cfg.max_penetration * 1000:.1f} mm)")


def _settling(env: SimEnv, cfg: ValidityConfig) -> None:
    """Hold the robot still; every object must come to rest on the table near where it started."""
    s0 = env.state()
    s1 = env.hold(cfg.settle_steps)
    if env.has_nan():
        raise _Failed("settling", f"the simulation became unstable (NaN) within {cfg.settle_steps} steps")
    m, d, ix = env.model, env.data, env.index
    x0, x1 = TABLE_CENTER_X - TABLE_HALF[0], TABLE_CENTER_X + TABLE_HALF[0]
    y0, y1 = -TABLE_HALF[1], TABLE_HALF[1]
    for i, name in enumerate(ix.objects):
        p0, p1 = s0.obj_pos[i], s1.obj_pos[i]
        bottom = s1.bounds(name)[0][2]
        if bottom < cfg.fall_z or not (x0 <= p1[0] <= x1 and y0 <= p1[1] <= y1):
            raise _Failed("settling", f"{name!r} fell off the table (now at {_fmt(p1)})")
        moved = float(np.linalg.norm(p1 - p0))
        if moved > cfg.max_drift:
            how = "dropped" if p0[2] - p1[2] > cfg.max_drift else "moved"
            raise _Failed("settling", f"{name!r} {how} {moved * 100:.1f} cm while settling, from "
                          f"{_fmt(p0)} to {_fmt(p1)} (tolerance {cfg.max_drift * 100:.1f} cm): it was "
                          "floating or unstable")
        dof = m.jnt_dofadr[m.body_jntadr[ix.object_body[i]]]
        speed = float(np.linalg.norm(d.qvel[dof:dof + 3]))
        if speed > cfg.rest_speed:
            raise _Failed("settling", f"{name!r} is still moving at {speed:.3f} m/s after {cfg.settle_steps} "
                          f"steps (rest below {cfg.rest_speed} m/s)")
    for j, name in enumerate(s1.layout.joints):
        lo, hi = s1.layout.joint_range[j]
        drift = abs(s1.joint_q[j] - s0.joint_q[j]) / max(hi - lo, 1e-9)
        if drift > cfg.max_joint_drift:
            raise _Failed("settling", f"fixture joint {name!r} drifted {drift:.0%} of its range while "
                          f"settling (tolerance {cfg.max_joint_drift:.0%})")


def _fmt(p: np.ndarray) -> str:
    return "(" + ", ".join(f"{x:.3f}" for x in p) + ")"


def _reach_targets(s: WorldState, spec: SceneSpec, handles: str) -> dict[str, np.ndarray]:
    """Every object; the handles (all, or of the joints the goal names); the regions the goal names."""
    named = {a for g in spec.goal for a in g.args if isinstance(a, str)}
    out = {f"object {n!r}": s.position(n) for n in s.layout.objects}
    out.update({f"handle of {j!r}": s.handle(j) for j in s.layout.handles
                if handles == "all" or j in named})
    out.update({f"region {r!r}": _near_point(s, k) for k, r in enumerate(s.layout.regions) if r in named})
    return out


def _near_point(s: WorldState, k: int, inset: float = 0.03) -> np.ndarray:
    """The point of region k nearest the robot base (at the region's mid height, `inset` inside its
    sides): an object can go anywhere in a drawer, so its far corner need not be reachable."""
    R, c, h = s.region_mat[k], s.region_pos[k], s.layout.region_half[k]
    local = R.T @ (np.array(ROBOT_BASE) - c)
    lim = np.maximum(h[:2] - inset, 0.0)
    return c + R @ np.array([*np.clip(local[:2], -lim, lim), 0.0])


def _reachability(env: SimEnv, cfg: ValidityConfig) -> None:
    """Every target (see `_reach_targets`) inside the workspace, and an IK solution 5 cm above it."""
    base = np.array(ROBOT_BASE)
    ik = _IK(env, cfg)
    for what, p in _reach_targets(env.state(), env.spec, cfg.handles).items():
        r = float(np.hypot(*(p[:2] - base[:2])))
        if not cfg.reach_min <= r <= cfg.reach_max:
            raise _Failed("reachability", f"{what} at {_fmt(p)} is {r:.2f} m from the robot base "
                          f"horizontally (workspace {cfg.reach_min:.2f}–{cfg.reach_max:.2f} m)")
        if p[2] - base[2] >= cfg.reach_height:
            raise _Failed("reachability", f"{what} at {_fmt(p)} is {p[2] - base[2]:.2f} m high "
                          f"(workspace below {cfg.reach_height:.2f} m)")
        goal = p + np.array([0.0, 0.0, cfg.ik_offset])
        err, tilt = ik.solve(goal)
        if err > cfg.ik_pos_tol or tilt > cfg.ik_angle_tol:
            raise _Failed("reachability", f"the gripper cannot reach {cfg.ik_offset * 100:.0f} cm above "
                          f"{what} at {_fmt(p)} pointing down ({r:.2f} m from the base; best IK error "
                          f"{err * 100:.1f} cm, tilt {np.degrees(tilt):.0f}°)")


class _IK:
    """Damped-least-squares IK of the grip site on a scratch MjData, within the arm's joint limits."""

    def __init__(self, env: SimEnv, cfg: ValidityConfig) -> None:
        self.m, self.ix, self.cfg = env.model, env.index, cfg
        self.d = mujoco.MjData(self.m)
        self.d.qpos[:] = env.built.init_qpos
        jnt = self.m.dof_jntid[self.ix.arm_dof]
        self.lo, self.hi = self.m.jnt_range[jnt, 0], self.m.jnt_range[jnt, 1]
        self.jacp, self.jacr = np.zeros((3, self.m.nv)), np.zeros((3, self.m.nv))

    def _fk(self) -> tuple[np.ndarray, np.ndarray]:
        mujoco.mj_kinematics(self.m, self.d)
        mujoco.mj_comPos(self.m, self.d)
        s = self.ix.ee_site
        return self.d.site_xpos[s].copy(), self.d.site_xmat[s].reshape(3, 3).copy()

    def solve(self, goal: np.ndarray) -> tuple[float, float]:
        """Returns (position error m, tilt from straight down rad) of the best pose found."""
        m, d, ix, cfg = self.m, self.d, self.ix, self.cfg
        d.qpos[ix.arm_qpos] = ROBOT_INIT_QPOS
        lam2 = cfg.ik_damping**2
        best = (np.inf, np.inf)
        for _ in range(cfg.ik_iters):
            pos, R = self._fk()
            axis = R[:, 2]
            err, tilt = float(np.linalg.norm(goal - pos)), float(np.arccos(np.clip(axis @ DOWN, -1, 1)))
            if err + tilt * 0.1 < best[0] + best[1] * 0.1:
                best = (err, tilt)
            if err < cfg.ik_pos_tol / 4 and tilt < cfg.ik_angle_tol / 4:
                break
            mujoco.mj_jacSite(m, d, self.jacp, self.jacr, ix.ee_site)
            J = np.vstack((self.jacp[:, ix.arm_dof], self.jacr[:, ix.arm_dof]))
            # pointing error only (yaw is free): the rotation that turns the approach axis to straight down
            e = np.concatenate((goal - pos, orientation_error(_down_frame(R), R)))
            dq = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(6), e)
            d.qpos[ix.arm_qpos] = np.clip(d.qpos[ix.arm_qpos] + dq, self.lo, self.hi)
        return best


def _down_frame(R: np.ndarray) -> np.ndarray:
    """The rotation nearest to R whose z axis points straight down: R turned about (z × down)."""
    z = R[:, 2]
    v = np.cross(z, DOWN)
    s, c = float(np.linalg.norm(v)), float(z @ DOWN)
    if s < 1e-9:
        return R if c > 0 else R @ np.diag([1.0, -1.0, -1.0])
    return axis_angle_to_mat(v / s * np.arctan2(s, c)) @ R


def _solvability(env: SimEnv, cfg: ValidityConfig) -> Episode:
    del cfg  # the expert runs under the scene's own step limit
    ep = run_mujoco_episode(env.spec, env=env)
    if not ep.success:
        raise _Failed("solvability", f"the scripted expert failed in phase {ep.failing_phase!r} after "
                      f"{ep.steps} steps (goal: {', '.join(map(str, env.spec.goal))})", ep)
    return ep


# the checks after compiling, in order; each raises `_Failed`, and only solvability returns something
_ENV_CHECKS: tuple[tuple[str, Callable[[SimEnv, ValidityConfig], Episode | None]], ...] = (
    ("interpenetration", _interpenetration), ("settling", _settling), ("reachability", _reachability),
    ("solvability", _solvability),
)
