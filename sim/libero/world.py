"""A `SceneSpec` that names a LIBERO task (`SceneSpec.libero`) as LIBERO's own scene and environment, and
LIBERO's simulator state as our `WorldState`, so the loop's episode files, phase labels, critic, features
and training read a LIBERO episode as they read one of ours.

- `libero_scene(spec)`: the task's BDDL from the installed package (`libero_object/<task>.bddl`), with the
  spec's edits applied (`swap`, and the spec's instruction when it is not the file's own words).
- `LiberoReader(env)`: `WorldState`s of a `LiberoEnv`. Objects are LIBERO's movable objects as ours are:
  the root body's world rotation and its collision box in the body's frame (so a policy sees which way
  an item is turned, and `WorldState.bounds` is LIBERO's own box); regions are the goal's
  target when it is a region site (a basket's inside), with the site's box; no joints or handles yet (the
  drawer suites are not in a family). Heights are measured from the objects' support at reset (the floor
  of `libero_object`, a table top elsewhere), as our table top is z = 0. Contacts are per entity (robot,
  table, each object), and `grasp` is both finger pads touching an object, as in our world.
"""

from __future__ import annotations

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
        entities = ("robot", "table", *self.objects)
        owner = np.full(m.nbody, -1, int)
        for b in range(m.nbody):
            name = m.body_id2name(b) or ""
            if name.startswith(_ROBOT):
                owner[b] = 0
            elif b == 0 or "table" in name or name == "floor":
                owner[b] = 1
            else:
                hit = [i for i, o in enumerate(self.objects) if name.startswith(o)]
                owner[b] = 2 + max(hit, key=lambda i: len(self.objects[i])) if hit else -1
        self._geom_owner = owner[m.geom_bodyid]
        self._pads = np.array([m.geom_name2id(p) for p in PADS], int)
        self.layout = StateLayout(
            objects=self.objects,
            object_half=np.array([h for _, h in local]).reshape(-1, 3),
            object_center=np.array([c for c, _ in local]).reshape(-1, 3),
            joints=(), joint_range=np.zeros((0, 2)),
            regions=self.regions,
            region_half=np.array([m.site_size[s] for s in self._sites], float).reshape(-1, 3),
            handles=(), entities=entities)

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
        return WorldState(
            layout=self.layout,
            ee_pos=self._up(env.eef),
            ee_mat=env.eef_mat,
            gripper=env.gripper_width,
            obj_pos=pos,
            obj_mat=mats.reshape(-1, 3, 3),
            joint_q=np.zeros(0),
            region_pos=np.array([self._up(d.site_xpos[s]) for s in self._sites]).reshape(-1, 3),
            region_mat=np.array([d.site_xmat[s].reshape(3, 3) for s in self._sites]).reshape(-1, 3, 3),
            handle_pos=np.zeros((0, 3)),
            contacts=contacts,
            grasp=grasp,
        )


