"""Pick-place: put a graspable object onto a plate."""

from sim.families.pick_place.family import PickPlace

__all__ = ["PickPlace"]
