"""Push: slide an object along the table until it touches a heavy target block (no grasp)."""

from sim.families.push.family import Push

__all__ = ["Push"]
