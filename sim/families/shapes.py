"""Graspable objects shared by the families: a shape name → an `ObjectSpec`."""

from __future__ import annotations

from sim.scene import ObjectSpec

# shape → (kind, (x, y, z) multipliers of the size factor); all fit the Panda's 8 cm opening
PICKABLE: dict[str, tuple[str, tuple[float, float, float]]] = {
    "cube": ("box", (1.0, 1.0, 1.0)),
    "cylinder": ("cylinder", (1.0, 1.2, 0.0)),
    "block": ("box", (1.6, 0.8, 1.0)),  # an oblong block, long along its x
    "tall_cylinder": ("cylinder", (0.85, 1.9, 0.0)),
    "peg": ("box", (1.0, 1.0, 2.6)),
}
OBJECT_WORDS = {"cube": "cube", "cylinder": "can", "block": "block", "tall_cylinder": "bottle", "peg": "peg"}


def pickable_object(name: str, shape: str, size: float, rgba, mass: float, friction: float,
                    pos: tuple[float, float], yaw: float) -> ObjectSpec:
    kind, (mx, my, mz) = PICKABLE[shape]
    dims = (size * mx, size * my, size * mz)
    return ObjectSpec(name=name, kind=kind, category=OBJECT_WORDS[shape], size=dims, rgba=tuple(rgba),
                      mass=mass, friction=friction, pos=(float(pos[0]), float(pos[1])), yaw=float(yaw))
