"""`SimEnv`: one compiled scene, stepped at 20 Hz through the operational-space controller."""

from __future__ import annotations

import mujoco
import numpy as np

from sim.builder import SUBSTEPS, BuiltScene, build_scene
from sim.conditions import ActionNoise, started
from sim.controller import OSCConfig, OSCController
from sim.predicates import goal_reached
from sim.scene import SceneSpec
from sim.world import StateReader, WorldState

SETTLE_STEPS = 10  # control steps held after the policy stops, before the success test


class SimEnv:
    """Build once, reset many times. `step` takes a normalised 7-D action and returns the new state."""

    def __init__(self, spec: SceneSpec | BuiltScene, osc: OSCConfig | None = None) -> None:
        self.built = started(spec if isinstance(spec, BuiltScene) else build_scene(spec))
        self.spec = self.built.spec
        self.noise = ActionNoise(self.spec)  # the scene's actuation noise and gain (none by default)
        self.model = self.built.model
        self.data = mujoco.MjData(self.model)
        self.index = self.built.index
        self.controller = OSCController(self.model, self.index, osc)
        self.reader = StateReader(self.model, self.index)
        self._chunk = self.controller.cfg.update_every
        self.steps = 0

    def reset(self) -> WorldState:
        d = self.data
        mujoco.mj_resetData(self.model, d)
        d.qpos[:] = self.built.init_qpos
        mujoco.mj_forward(self.model, d)
        self.controller.reset(d)
        self.noise.reset()
        self.steps = 0
        return self.reader.read(d)

    def step(self, action: np.ndarray) -> WorldState:
        m, d, c = self.model, self.data, self.controller
        c.set_action(d, self.noise(np.asarray(action, float)))
        for _ in range(SUBSTEPS // self._chunk):
            c.apply(d)
            mujoco.mj_step(m, d, self._chunk)
        self.steps += 1
        return self.reader.read(d)

    def hold(self, n: int) -> WorldState:
        """Step `n` control steps holding the current goal pose (used to let a scene settle)."""
        m, d, c = self.model, self.data, self.controller
        for _ in range(n * (SUBSTEPS // self._chunk)):
            c.apply(d)
            mujoco.mj_step(m, d, self._chunk)
        return self.reader.read(d)

    def state(self) -> WorldState:
        return self.reader.read(self.data)

    def success(self, state: WorldState | None = None) -> bool:
        return goal_reached(state or self.state(), self.spec.goal)

    def has_nan(self) -> bool:
        return bool(np.isnan(self.data.qpos).any() or np.isnan(self.data.qvel).any())
