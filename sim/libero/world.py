"""A `SceneSpec` that names a LIBERO task (`SceneSpec.libero`) as LIBERO's own scene and environment, and
LIBERO's simulator state as our `WorldState`, so the loop's episode files, phase labels, critic, features
and training read a LIBERO episode as they read one of ours.

- `libero_scene(spec)`: the task's BDDL from the installed package (`libero_object/<task>.bddl`), with the
  spec's edits applied (`swap`, and the spec's instruction when it is not the file's own words).
- `LiberoReader(env)`: `WorldState`s of a `LiberoEnv`. Objects are LIBERO's movable objects as ours are:
  the root body's world rotation and its collision box in the body's frame (so a policy sees which way
  an item is turned, and `WorldState.bounds` is LIBERO's own box); regions are the goal's
  target when it is a region site (a basket's inside, a stove's cook region), with the site's box. A goal
  that opens or closes a drawer (`(Open R)`, libero_goal) adds its slide joint as `<fixture>/<level>`
  (`wooden_cabinet_1/middle_level`), read as how far the drawer is pulled out (the sign LIBERO's "open"
  has: the wooden cabinet's drawers open towards negative joint positions), with its handle (the geom
  `sim.libero.drawer.DrawerExpert` takes) and the fixture as a contact entity, so a hand on the handle is
  `grasped` as in our articulated family; other goals keep the layout they had. Heights are measured
  from the objects' support at reset (the floor of `libero_object`, a table top elsewhere), as our table
  top is z = 0. Contacts are per entity (robot, table, each object), and `grasp` is both finger pads
  touching an object, as in our world.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sim.libero.scene import LiberoScene
from sim.world import StateLayout, WorldState, entity_contacts

if TYPE_CHECKING:
    from sim.libero.env import LiberoEnv
    from sim.scene import SceneSpec

PADS = ("gripper0_finger1_pad_collision", "gripper0_finger2_pad_collision")
_ROBOT = ("robot0_", "gripper0_", "mount0_")


def task_bddl(suite: str, task: str) -> Path:
    """The installed package's BDDL file of one task of a suite."""
    from libero.libero import get_default_path_dict

    path = Path(get_default_path_dict()["bddl_files"]) / suite / f"{task}.bddl"
    if not path.is_file():
        raise FileNotFoundError(f"no LIBERO task {suite}/{task} ({path} does not exist)")
    return path


def libero_scene(spec: SceneSpec) -> LiberoScene:
    """The LIBERO problem a LIBERO spec names, edited as it says."""
    ref = spec.libero
    if ref is None:
        raise ValueError(f"scene {spec.scene_id} is not a LIBERO scene (`libero` is unset)")
    scene = LiberoScene.from_bddl(task_bddl(ref.suite, ref.task))
    mover = ref.mover or scene.goal[0][1]
    if ref.swap is not None:
        scene = scene.swapped(mover, ref.swap)
    if ref.move is not None:
        scene = scene.moved(scene.start_region(mover).full_name, *ref.move)
    if spec.instruction != scene.language:
        scene = scene.reworded(spec.instruction)
    return scene


@dataclass(frozen=True)
class Drawer:
    """A drawer a goal opens or closes, as the reader tracks it."""

    name: str  # `<fixture>/<level>`, e.g. "wooden_cabinet_1/middle_level"
    fixture: str
    joint: int  # the slide joint's id
    qpos: int  # its address in qpos
    sign: float  # +1 or -1: the joint direction that opens the drawer
    handle: int  # the handle's collision geom


def goal_drawer(env: LiberoEnv) -> Drawer | None:
    """The drawer the task's goal `(Open R)` / `(Close R)` names, or None for any other goal."""
    from sim.libero.drawer import drawer_handle, drawer_joint

    goal = env.goal[0] if len(env.goal) == 1 else []
    if len(goal) != 2 or goal[0] not in ("open", "close") or (joint := drawer_joint(env, goal[1])) is None:
        return None
    inner = env._inner
    fixture = inner.object_sites_dict[goal[1]].parent_name
    m = inner.sim.model
    joint_name = m.joint_id2name(joint)
    ranges = inner.get_object(fixture).object_properties["articulation"]
    sign = -1.0 if max(ranges["default_open_ranges"]) < min(ranges["default_close_ranges"]) else 1.0
    return Drawer(name=f"{fixture}/{joint_name.removeprefix(fixture + '_')}", fixture=fixture, joint=joint,
                  qpos=int(m.jnt_qposadr[joint]), sign=sign, handle=drawer_handle(env, joint)[0])


class LiberoReader:
    """Reads `WorldState`s from a `LiberoEnv` just reset (the layout is fixed from that state)."""

    def __init__(self, env: LiberoEnv) -> None:
        self.env = env
        sim = env._inner.sim
        m = sim.model
        self.objects = tuple(env.object_names)
        boxes = [env.box(n) for n in self.objects]
        self.support = float(min(b.lo[2] for b in boxes)) if boxes else 0.0
        local = [env.local_box(n) for n in self.objects]
        goal = env.goal[0] if env.goal else []
        self.regions = tuple(g for g in goal[2:3] if not env.is_object(g) and env.has_site(g))
        self._sites = [m.site_name2id(r) for r in self.regions]
        self.drawer = goal_drawer(env)
        drawers = (self.drawer,) if self.drawer else ()
        owners = (*self.objects, *(dr.fixture for dr in drawers))  # entities 2.. (bodies named after them)
        entities = ("robot", "table", *owners)
        owner = np.full(m.nbody, -1, int)
        for b in range(m.nbody):
            name = m.body_id2name(b) or ""
            if name.startswith(_ROBOT):
                owner[b] = 0
            elif b == 0 or "table" in name or name == "floor":
                owner[b] = 1
            else:
                hit = [i for i, o in enumerate(owners) if name.startswith(o)]
                owner[b] = 2 + max(hit, key=lambda i: len(owners[i])) if hit else -1
        self._geom_owner = owner[m.geom_bodyid]
        self._pads = np.array([m.geom_name2id(p) for p in PADS], int)
        self.layout = StateLayout(
            objects=self.objects,
            object_half=np.array([h for _, h in local]).reshape(-1, 3),
            object_center=np.array([c for c, _ in local]).reshape(-1, 3),
            joints=tuple(dr.name for dr in drawers),
            joint_range=np.array([np.sort(dr.sign * m.jnt_range[dr.joint]) for dr in drawers]).reshape(-1, 2),
            regions=self.regions,
            region_half=np.array([m.site_size[s] for s in self._sites], float).reshape(-1, 3),
            handles=tuple(dr.name for dr in drawers), entities=entities)

    def _up(self, p: np.ndarray) -> np.ndarray:
        return np.asarray(p, float) - [0.0, 0.0, self.support]

    def read(self) -> WorldState:
        env = self.env
        d = env._inner.sim.data
        poses = [env.pose(n) for n in self.objects]
        centers = self.layout.object_center
        pos = np.array([self._up(p + m @ c) for (p, m), c in zip(poses, centers, strict=True)])
        mats = np.array([m for _, m in poses])
        geoms = np.array([d.contact[i].geom for i in range(d.ncon)], int).reshape(-1, 2)
        contacts, grasp = entity_contacts(geoms, self._geom_owner, self._pads, len(self.layout.entities))
        grasp[1] = False  # nor is the table
        drawers = (self.drawer,) if self.drawer else ()
        return WorldState(
            layout=self.layout,
            ee_pos=self._up(env.eef),
            ee_mat=env.eef_mat,
            gripper=env.gripper_width,
            obj_pos=pos,
            obj_mat=mats.reshape(-1, 3, 3),
            joint_q=np.array([dr.sign * d.qpos[dr.qpos] for dr in drawers], float),
            region_pos=np.array([self._up(d.site_xpos[s]) for s in self._sites]).reshape(-1, 3),
            region_mat=np.array([d.site_xmat[s].reshape(3, 3) for s in self._sites]).reshape(-1, 3, 3),
            handle_pos=np.array([self._up(d.geom_xpos[dr.handle]) for dr in drawers]).reshape(-1, 3),
            contacts=contacts,
            grasp=grasp,
        )


