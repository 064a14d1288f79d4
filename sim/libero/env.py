"""One LIBERO task's environment: reset to an init state of the task's own suite, step with LIBERO's action,
read privileged state.

The action is LIBERO's: 7 numbers in [-1, 1] for robosuite's OSC_POSE controller at 20 Hz — end-effector
position delta (1 ↦ 5 cm), rotation delta as an axis-angle (1 ↦ 0.5 rad), gripper (-1 open, +1 close).
Cameras are off (a policy that needs images renders them itself); the episode's success is LIBERO's own
`_check_success` of the BDDL goal.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np


class TaskFile(Protocol):
    """A task's BDDL file and name (`experiments.liberopro.evaluate.LiberoTask` is one)."""

    bddl: Path
    name: str

# no-op steps after setting an init state, before the episode's first counted step: objects placed by the
# init state settle on their supports (the published LIBERO evaluators wait 10 steps the same way)
SETTLE_STEPS = 10
_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


@dataclass(frozen=True)
class Box:
    """An axis-aligned bounding box in world coordinates (m)."""

    lo: np.ndarray
    hi: np.ndarray

    @property
    def center(self) -> np.ndarray:
        return (self.lo + self.hi) / 2

    @property
    def size(self) -> np.ndarray:
        return self.hi - self.lo


class _NoMacroNag(logging.Filter):
    """robosuite asks, on every import, for a private macro file it does not need: three warning lines in
    every process (each episode worker)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return "macro file" not in msg and "setup_macros" not in msg


def quiet_robosuite() -> None:
    """Call before anything imports robosuite: its import-time macro-file nag and log noise are filtered."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    for name in ("robosuite", "robosuite_logs"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.ERROR)
        if not any(isinstance(f, _NoMacroNag) for f in logger.filters):
            logger.addFilter(_NoMacroNag())


class LiberoEnv:
    """A real LIBERO environment for one BDDL problem: a suite's task file (`for_task`) or a scene we wrote
    (`sim.libero.scene.LiberoScene.write`)."""

    def __init__(self, bddl: str | Path, name: str = "", cameras: tuple[str, ...] = (),
                 image_size: int = 128) -> None:
        """`cameras`: robosuite camera names rendered into every observation (e.g. "agentview",
        "robot0_eye_in_hand"), square at `image_size`; none by default (privileged state only)."""
        quiet_robosuite()
        with contextlib.redirect_stdout(io.StringIO()):
            from libero.libero.envs.env_wrapper import ControlEnv

            # ControlEnv, not LIBERO's OffScreenRenderEnv: that one forces the offscreen renderer on, whose
            # context (LIBERO's textures uploaded) costs ~0.8 s per environment with no camera to feed
            kw: dict[str, Any] = {"has_offscreen_renderer": False, "use_camera_obs": False}
            if cameras:
                kw = {"has_offscreen_renderer": True, "use_camera_obs": True, "camera_names": list(cameras),
                      "camera_heights": image_size, "camera_widths": image_size}
            self._env = ControlEnv(bddl_file_name=str(bddl), has_renderer=False, **kw)
        self.bddl = Path(bddl)
        self.name = name or self.bddl.stem
        self.obs: dict[str, Any] = {}
        self.steps = 0
        self._geoms: dict[str, list[int]] = {}  # name → its collision geoms (the model never changes)
        self._sites: set[str] | None = None
        self.start_positions: dict[str, np.ndarray] = {}  # set by reset

    @classmethod
    def for_task(cls, task: TaskFile) -> LiberoEnv:
        """The task's environment, from its own suite folder's BDDL."""
        return cls(task.bddl, task.name)

    # ---- episode --------------------------------------------------------------------------------------
    def reset(self, state: np.ndarray | None = None, seed: int = 0) -> dict[str, Any]:
        """Reset (LIBERO samples every object's start in its region), then — with `state`, one row of a
        task's init-state file — set the simulator to it; let it settle."""
        self._env.seed(seed)
        self._env.reset()
        if state is not None:
            self._env.set_init_state(state)
        # the start as placed, before settling: what starts are compared by (experiments.liberopro.starts)
        self.start_positions = self.object_positions()
        for _ in range(SETTLE_STEPS):
            self.obs, *_ = self._env.step(np.r_[np.zeros(6), -1.0])
        self.steps = 0
        return self.obs

    def step(self, action: np.ndarray) -> dict[str, Any]:
        a = np.asarray(action, dtype=float)
        if a.shape != (7,):
            raise ValueError(f"a LIBERO action has 7 numbers (dpos 3, drot 3, gripper), got shape {a.shape}")
        self.obs, *_ = self._env.step(np.clip(a, -1.0, 1.0))
        self.steps += 1
        return self.obs

    def success(self) -> bool:
        return bool(self._inner._check_success())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._env.close()

    # ---- privileged state ----------------------------------------------------------------------------------
    @property
    def _inner(self) -> Any:
        return self._env.env

    @property
    def goal(self) -> list[list[str]]:
        """The BDDL goal's atoms, e.g. [['on', 'akita_black_bowl_1', 'plate_1']]."""
        return [list(map(str, g)) for g in self._inner.parsed_problem["goal_state"]]

    @property
    def eef(self) -> np.ndarray:
        return np.asarray(self.obs["robot0_eef_pos"], dtype=float).copy()

    @property
    def eef_mat(self) -> np.ndarray:
        """The hand's world orientation (3×3), from the observation's quaternion."""
        import robosuite.utils.transform_utils as T

        return T.quat2mat(np.asarray(self.obs["robot0_eef_quat"], dtype=float))

    @property
    def gripper_width(self) -> float:
        q = self.obs["robot0_gripper_qpos"]
        return float(abs(q[0]) + abs(q[1]))

    def object_positions(self) -> dict[str, np.ndarray]:
        """Each movable object's world position (its root body), by name."""
        return {n: self.pose(n)[0] for n in self.object_names}

    def positions_at(self, state: np.ndarray) -> dict[str, np.ndarray]:
        """`object_positions` in `state`, a row of one of this task's init-state files, as placed (not
        settled). It sets the simulator to that state: call it between episodes only."""
        self._env.set_init_state(state)
        return self.object_positions()

    def fixture_position(self, name: str) -> np.ndarray:
        """A fixture's world position (its root body): a cabinet, stove or rack, which LIBERO places from
        the BDDL's region rather than from an init state. Kinematics are computed first (a fresh
        environment has none yet); the state is not changed."""
        sim = self._inner.sim
        sim.forward()
        body = sim.model.body_name2id(self._inner.fixtures_dict[name].root_body)
        return np.asarray(sim.data.body_xpos[body], dtype=float).copy()

    def is_object(self, name: str) -> bool:
        return name in self._inner.objects_dict

    @property
    def object_names(self) -> list[str]:
        """The movable objects, in the problem's order."""
        return list(self._inner.objects_dict)

    @property
    def fixture_names(self) -> list[str]:
        return list(self._inner.fixtures_dict)

    def has_site(self, name: str) -> bool:
        if self._sites is None:
            m = self._inner.sim.model
            self._sites = {m.site_id2name(i) for i in range(m.nsite)}
        return name in self._sites

    def site_pos(self, name: str) -> np.ndarray:
        sim = self._inner.sim
        return np.asarray(sim.data.site_xpos[sim.model.site_name2id(name)], dtype=float).copy()

    def _collision_geoms(self, name: str) -> list[int]:
        """The collision geoms of an object or fixture (its bodies are named after it)."""
        if name not in self._geoms:
            m = self._inner.sim.model
            bodies = {i for i in range(m.nbody) if (m.body_id2name(i) or "").startswith(name)}
            self._geoms[name] = [g for g in range(m.ngeom) if m.geom_bodyid[g] in bodies
                                 and (m.geom_contype[g] != 0 or m.geom_conaffinity[g] != 0)]
        if not self._geoms[name]:
            raise KeyError(f"{self.name}: no collision geometry named {name!r}")
        return self._geoms[name]

    def _corners(self, name: str) -> np.ndarray:
        """World corners (8k, 3) of the boxes of every collision geom of an object or fixture (its bodies
        are named after it)."""
        m, d = self._inner.sim.model, self._inner.sim.data
        out = []
        for g in self._collision_geoms(name):
            c, h = m.geom_aabb[g][:3], m.geom_aabb[g][3:]
            out.append((_CORNERS * h + c) @ d.geom_xmat[g].reshape(3, 3).T + d.geom_xpos[g])
        return np.concatenate(out)

    def inside(self, name: str, points: np.ndarray) -> np.ndarray:
        """Which of `points` (k, 3) lie inside the box of one of an object's or fixture's collision geoms
        (each geom's own oriented box)."""
        m, d = self._inner.sim.model, self._inner.sim.data
        hit = np.zeros(len(points), dtype=bool)
        for g in self._collision_geoms(name):
            c, h = m.geom_aabb[g][:3], m.geom_aabb[g][3:]
            local = (points - d.geom_xpos[g]) @ d.geom_xmat[g].reshape(3, 3)
            hit |= (np.abs(local - c) <= h).all(axis=1)
        return hit

    def box(self, name: str) -> Box:
        """World axis-aligned bounding box of an object's or fixture's collision geoms."""
        corners = self._corners(name)
        return Box(corners.min(0), corners.max(0))

    def pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World position and 3×3 rotation of an object's root body."""
        sim = self._inner.sim
        body = sim.model.body_name2id(self._inner.objects_dict[name].root_body)
        return (np.asarray(sim.data.body_xpos[body], dtype=float).copy(),
                np.asarray(sim.data.body_xmat[body], dtype=float).reshape(3, 3).copy())

    def local_box(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """An object's collision box in its root body's frame: (centre, half extents) — what stays the
        same however the object turns (our `StateLayout.object_center`, `object_half`)."""
        pos, mat = self.pose(name)
        local = (self._corners(name) - pos) @ mat
        lo, hi = local.min(0), local.max(0)
        return (lo + hi) / 2, (hi - lo) / 2
