"""Test helpers: synthetic world states, a loader that imports a seed file as a module, registration."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

from sim.world import StateLayout, WorldState


def registered(family: str) -> bool:
    from sim.families import FAMILIES

    return family in FAMILIES.names()


def import_file(path: Path) -> ModuleType:
    """Import a program file as a module: test code only (product code never runs programs in-process)."""
    spec = importlib.util.spec_from_file_location(f"_seed_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic_state(n: int, pos: np.ndarray, gripper: float = 0.04) -> WorldState:
    """A world with `n` unit-free point objects o0..o{n-1} at `pos` (n, 3): expressions that read
    x/y/z of them see exactly these numbers."""
    names = tuple(f"o{i}" for i in range(n))
    layout = StateLayout(objects=names, object_half=np.zeros((n, 3)), object_center=np.zeros((n, 3)),
                         joints=(), joint_range=np.zeros((0, 2)), regions=(), region_half=np.zeros((0, 3)),
                         handles=(), entities=("robot", "table", *names))
    e = n + 2
    return WorldState(layout=layout, ee_pos=np.zeros(3), ee_mat=np.eye(3), gripper=gripper,
                      obj_pos=np.asarray(pos, float), obj_mat=np.tile(np.eye(3), (n, 1, 1)),
                      joint_q=np.zeros(0), region_pos=np.zeros((0, 3)), region_mat=np.zeros((0, 3, 3)),
                      handle_pos=np.zeros((0, 3)), contacts=np.zeros((e, e), bool), grasp=np.zeros(e, bool))
