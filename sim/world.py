"""`WorldState`: an immutable snapshot read from the simulator, the only thing predicates see.

The static part (`StateLayout`: names, object sizes, joint ranges, region sizes) is shared by every
snapshot of a scene; the dynamic part is a handful of small arrays, cheap to read every control step
and to stack into an episode file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import mujoco
import numpy as np

from sim.builder import SceneIndex

DYNAMIC = (
    "ee_pos",
    "ee_mat",
    "gripper",
    "obj_pos",
    "obj_mat",
    "joint_q",
    "region_pos",
    "region_mat",
    "handle_pos",
    "contacts",
    "grasp",
)


@dataclass(frozen=True)
class StateLayout:
    """What does not change within a scene."""

    objects: tuple[str, ...]
    object_half: np.ndarray  # (N, 3) body-frame AABB half extents
    object_center: np.ndarray  # (N, 3) body-frame AABB centre
    joints: tuple[str, ...]
    joint_range: np.ndarray  # (J, 2)
    regions: tuple[str, ...]
    region_half: np.ndarray  # (R, 3)
    handles: tuple[str, ...]  # joint names whose handle positions are tracked
    entities: tuple[str, ...]  # contact entities: "robot", "table", objects, fixtures

    def to_json(self) -> dict:
        return {
            f.name: (v.tolist() if isinstance(v := getattr(self, f.name), np.ndarray) else list(v))
            for f in fields(self)
        }

    @classmethod
    def from_json(cls, d: dict) -> StateLayout:
        return cls(
            **{
                k: (
                    np.array(v, float)
                    if k in ("object_half", "object_center", "joint_range", "region_half")
                    else tuple(v)
                )
                for k, v in d.items()
            }
        )

    @classmethod
    def from_index(cls, ix: SceneIndex) -> StateLayout:
        return cls(
            objects=ix.objects,
            object_half=ix.object_half,
            object_center=ix.object_local_center,
            joints=tuple(ix.joints),
            joint_range=np.array([[lo, hi] for _, lo, hi in ix.joints.values()]).reshape(-1, 2),
            regions=tuple(ix.regions),
            region_half=np.array([r[2] for r in ix.regions.values()]).reshape(-1, 3),
            handles=tuple(ix.handles),
            entities=ix.entity_names,
        )


@dataclass(frozen=True)
class WorldState:
    """One snapshot. Positions are world (= table) frame, metres; rotations are 3×3 matrices."""

    layout: StateLayout
    ee_pos: np.ndarray  # (3,) grip site between the finger pads
    ee_mat: np.ndarray  # (3, 3)
    gripper: float  # finger opening, m (0 closed … 0.08 open)
    obj_pos: np.ndarray  # (N, 3) AABB centre of each object in the world
    obj_mat: np.ndarray  # (N, 3, 3)
    joint_q: np.ndarray  # (J,) articulated joint positions
    region_pos: np.ndarray  # (R, 3)
    region_mat: np.ndarray  # (R, 3, 3)
    handle_pos: np.ndarray  # (H, 3)
    contacts: np.ndarray  # (E, E) bool, symmetric
    grasp: np.ndarray  # (E,) bool: both finger pads touch this entity

    # ---- lookups -------------------------------------------------------------------------------
    def obj(self, name: str) -> int:
        try:
            return self.layout.objects.index(name)
        except ValueError:
            raise KeyError(f"no object {name!r}; objects: {list(self.layout.objects)}") from None

    def entity(self, name: str) -> int:
        try:
            return self.layout.entities.index(name.split("/")[0])
        except ValueError:
            raise KeyError(f"no entity {name!r}; entities: {list(self.layout.entities)}") from None

    def joint(self, name: str) -> int:
        try:
            return self.layout.joints.index(name)
        except ValueError:
            raise KeyError(f"no joint {name!r}; joints: {list(self.layout.joints)}") from None

    def bounds(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World AABB (lo, hi) of an object (its rotated body-frame box)."""
        i = self.obj(name)
        h = np.abs(self.obj_mat[i]) @ self.layout.object_half[i]
        return self.obj_pos[i] - h, self.obj_pos[i] + h

    def handle(self, joint: str) -> np.ndarray:
        """World position of the handle bar that moves `joint` (e.g. "cabinet/drawer0")."""
        try:
            return self.handle_pos[self.layout.handles.index(joint)]
        except ValueError:
            raise KeyError(f"no handle for joint {joint!r}; handles: {list(self.layout.handles)}") from None

    def position(self, name: str) -> np.ndarray:
        """Position of an object, a region (bin, drawer interior, hole), "<joint>:handle", or "ee".

        A drawer's region and its joint share a name; the plain name means the region."""
        if name == "ee":
            return self.ee_pos
        if name.endswith(":handle"):
            return self.handle(name[: -len(":handle")])
        if name in self.layout.objects:
            return self.obj_pos[self.obj(name)]
        if name in self.layout.regions:
            return self.region_pos[self.layout.regions.index(name)]
        if name in self.layout.handles:
            return self.handle_pos[self.layout.handles.index(name)]
        raise KeyError(
            f"nothing named {name!r} has a position; objects: {list(self.layout.objects)}, "
            f"regions: {list(self.layout.regions)}"
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(getattr(self, k)) for k in DYNAMIC}

    @classmethod
    def from_arrays(cls, layout: StateLayout, arrays: dict[str, np.ndarray]) -> WorldState:
        vals = {k: arrays[k] for k in DYNAMIC}
        vals["gripper"] = float(vals["gripper"])
        return cls(layout=layout, **vals)


def entity_contacts(geoms: np.ndarray, owner: np.ndarray, pads: np.ndarray,
                    n_entities: int) -> tuple[np.ndarray, np.ndarray]:
    """(contacts (E, E), grasp (E,)) from the contacts' geom pairs (n, 2): `owner` maps a geom to its entity
    (−1: none), `pads` are the finger pad geoms; an entity is grasped when every pad touches it. Entity 0 is
    the robot, never grasped."""
    contacts = np.zeros((n_entities, n_entities), bool)
    grasp = np.zeros(n_entities, bool)
    if len(geoms):
        g = np.asarray(geoms, int).reshape(-1, 2)
        own = owner[g]
        ok = (own >= 0).all(1)
        contacts[own[ok, 0], own[ok, 1]] = True
        contacts[own[ok, 1], own[ok, 0]] = True
        for k, pad in enumerate(pads):
            hit = (g == pad).any(1)
            other = np.where(g[hit, 0] == pad, own[hit, 1], own[hit, 0])
            touched = np.zeros(n_entities, bool)
            touched[other[other >= 0]] = True
            grasp = touched if k == 0 else grasp & touched
        grasp[0] = False
    return contacts, grasp


class StateReader:
    """Reads `WorldState`s from MjData with everything it needs resolved once."""

    def __init__(self, model: mujoco.MjModel, index: SceneIndex) -> None:
        self.m, self.ix = model, index
        self.layout = StateLayout.from_index(index)
        self._jq = np.array([adr for adr, _, _ in index.joints.values()], int)
        self._rb = np.array([r[0] for r in index.regions.values()], int)
        self._rc = np.array([r[1] for r in index.regions.values()]).reshape(-1, 3)
        self._hg = np.array(list(index.handles.values()), int)
        owner = index.body_owner
        self._geom_owner = owner[model.geom_bodyid]
        self._pads = np.array(index.finger_geoms)

    def read(self, d: mujoco.MjData) -> WorldState:
        ix = self.ix
        ob = ix.object_body
        mats = d.xmat[ob].reshape(-1, 3, 3)
        pos = d.xpos[ob] + np.einsum("nij,nj->ni", mats, ix.object_local_center)
        rmats = d.xmat[self._rb].reshape(-1, 3, 3)
        rpos = d.xpos[self._rb] + np.einsum("nij,nj->ni", rmats, self._rc)
        contacts, grasp = entity_contacts(d.contact.geom[: d.ncon], self._geom_owner, self._pads,
                                          len(ix.entity_names))
        return WorldState(
            layout=self.layout,
            ee_pos=d.site_xpos[ix.ee_site].copy(),
            ee_mat=d.site_xmat[ix.ee_site].reshape(3, 3).copy(),
            gripper=float(d.qpos[ix.grip_qpos[0]] - d.qpos[ix.grip_qpos[1]]),
            obj_pos=pos,
            obj_mat=mats.copy(),
            joint_q=d.qpos[self._jq].copy(),
            region_pos=rpos,
            region_mat=rmats.copy(),
            handle_pos=d.geom_xpos[self._hg].copy(),
            contacts=contacts,
            grasp=grasp,
        )
