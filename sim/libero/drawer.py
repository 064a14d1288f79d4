"""A scripted expert for LIBERO's sliding drawers, over privileged state, and the one place an evaluation
asks for "the expert of this task" (`expert_for`).

Goals: `(Open R)` and `(Close R)` where R is a drawer's region (`wooden_cabinet_1_middle_region`: the
drawer is the body its slide joint `wooden_cabinet_1_middle_level` moves). An object to put into a closed
drawer (libero_goal's "open the top drawer and put the bowl inside", whose goal is only the `In` atom) is
not scripted: see `expert_for`.

The motion, each stage a phase label: turn (the hand horizontal, pointing into the cabinet, fingers closing
vertically) → approach (in front of the handle) → grasp (onto the handle bar, close) → pull (along the slide
axis, away from the cabinet) → release → retreat (the hand back where and as it began). Closing pushes the
front instead (approach → push → retreat, fingers closed). The handle is the drawer's collision geom
farthest along the slide axis from the drawer's middle; the pull direction is the axis pointing to it.
Written on libero_goal's middle drawer (init states 0–1) and its top drawer; nothing is tuned per task.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sim.libero.env import LiberoEnv
from sim.libero.expert import CLOSE, OPEN, PickPlaceExpert, ScriptedExpert, UnsupportedGoal, hold, move

PHASES = ("turn", "approach", "grasp", "pull", "push", "release", "retreat")
TRAVEL = 0.22  # m the hand pulls (or pushes) along the slide axis; the wooden cabinet's drawer opens ~0.2
STANDOFF = 0.12  # m in front of the handle where the straight approach starts
DEPTH = 0.01  # m past the handle bar's middle the open fingers are sent, so they close around all of it
PULL_SPEED = 0.3  # position action while pulling (1 = 5 cm a step): a fast pull slips off the bar


def drawer_joint(env: LiberoEnv, region: str) -> int | None:
    """The slide joint of the drawer whose region is `region` (`<fixture>_<level>_region` ↔
    `<fixture>_<level>_level`), or None when the region is no drawer's."""
    if not region.endswith("_region"):
        return None
    m = env._inner.sim.model
    name = region[: -len("_region")] + "_level"
    try:
        j = m.joint_name2id(name)
    except ValueError:
        return None
    return j if int(m.jnt_type[j]) == 2 else None  # 2: a slide joint


def drawer_handle(env: LiberoEnv, joint: int) -> tuple[int, np.ndarray]:
    """(the handle's collision geom, the unit pull direction, horizontal) of the drawer slide joint `joint`
    moves, from the drawer's geometry now: the handle is the drawer's collision geom farthest along the
    slide axis from the drawer's middle, and the pull points from the middle to it."""
    sim = env._inner.sim
    m, d = sim.model, sim.data
    body = int(m.jnt_bodyid[joint])
    axis = d.xmat[body].reshape(3, 3) @ m.jnt_axis[joint]
    geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] == body
             and (m.geom_contype[g] != 0 or m.geom_conaffinity[g] != 0)]
    if not geoms:
        raise UnsupportedGoal(f"{env.name}: drawer joint {m.joint_id2name(joint)!r} has no collision "
                              "geometry")
    along = {g: float((d.geom_xpos[g] - d.xpos[body]) @ axis) for g in geoms}
    handle = max(geoms, key=lambda g: abs(along[g]))
    pull = axis * np.sign(along[handle])
    pull[2] = 0.0  # the hand moves horizontally
    return handle, pull / np.linalg.norm(pull)


def _facing(pull: np.ndarray, now: np.ndarray) -> np.ndarray:
    """The hand orientation (world ← hand) pointing against `pull` with the fingers closing vertically —
    of the two such orientations, the one nearer `now`."""
    z = -pull / np.linalg.norm(pull)
    best, best_angle = None, np.inf
    for up in (np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, -1.0])):
        rot = np.column_stack([np.cross(up, z), up, z])
        angle = float(np.arccos(np.clip((np.trace(rot @ now.T) - 1) / 2, -1.0, 1.0)))
        if angle < best_angle:
            best, best_angle = rot, angle
    assert best is not None
    return best


class DrawerExpert(ScriptedExpert):
    """Opens or closes one drawer."""

    def __init__(self, env: LiberoEnv, region: str, how: str) -> None:
        if how not in ("open", "close"):
            raise UnsupportedGoal(f"{env.name}: a drawer can be opened or closed, not {how!r}")
        joint = drawer_joint(env, region)
        if joint is None:
            raise UnsupportedGoal(f"{env.name}: {region!r} is not a sliding drawer's region")
        self.env, self.region, self.how, self.joint = env, region, how, joint
        self.phase = PHASES[0]
        self._plan = self._script()

    def failure_phase(self) -> str:
        return "pull" if self.done and self.how == "open" else "push" if self.done else self.phase

    def _handle(self) -> tuple[np.ndarray, np.ndarray]:
        """(the handle's position, the unit pull direction) from the drawer's geometry now."""
        geom, pull = drawer_handle(self.env, self.joint)
        return self.env._inner.sim.data.geom_xpos[geom].copy(), pull

    def _script(self) -> Iterator[np.ndarray]:
        env = self.env
        bar, pull = self._handle()
        start, home = env.eef_mat, env.eef
        rot = _facing(pull, start)
        grip = OPEN if self.how == "open" else CLOSE
        self.phase = "turn"
        yield from move(env, env.eef + [0, 0, 0.02], grip, 60, 0.02, rot)
        self.phase = "approach"
        yield from move(env, bar + pull * STANDOFF, grip, 100, 0.01, rot)
        if self.how == "open":
            self.phase = "grasp"
            yield from move(env, bar - pull * DEPTH, OPEN, 60, 0.005, rot)
            yield from hold(CLOSE, 15, env, rot)
            self.phase = "pull"
            yield from move(env, bar + pull * TRAVEL, CLOSE, 120, 0.01, rot, speed=PULL_SPEED)
            self.phase = "release"
            yield from hold(OPEN, 10, env, rot)
        else:
            self.phase = "push"
            yield from move(env, bar - pull * TRAVEL, CLOSE, 120, 0.01, rot)
        self.phase = "retreat"
        yield from move(env, env.eef + pull * 0.08, OPEN, 40, 0.01, rot)
        # back toward the robot at this height, turning back (the arm is near full reach here: rising first
        # stretches it to its elbow limit), then where the hand began
        yield from move(env, np.r_[home[0], env.eef[1], env.eef[2]], OPEN, 80, 0.02, start)
        yield from move(env, home, OPEN, 80, 0.02, start)


def expert_for(env: LiberoEnv) -> ScriptedExpert:
    """The scripted expert for the task's goal: a drawer to open or close (`DrawerExpert`), an object to put
    on or in something (`PickPlaceExpert`); `UnsupportedGoal` with the reason for anything else — a stove
    knob, two atoms, or an object to put into a drawer that must be opened first (the two experts one after
    the other did not fit libero_goal's 300 steps: the hand must come back from full reach at the drawer
    before it can take the object)."""
    goal = env.goal
    if len(goal) == 1 and goal[0][0] in ("open", "close") and len(goal[0]) == 2:
        return DrawerExpert(env, goal[0][1], goal[0][0])
    if len(goal) == 1 and goal[0][0] == "in" and drawer_joint(env, goal[0][2]) is not None:
        raise UnsupportedGoal(f"{env.name}: putting an object into a drawer needs the drawer opened first; "
                              f"opening then placing is not scripted")
    return PickPlaceExpert(env)
